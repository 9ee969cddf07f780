// The verdicts of experiments/lib/training.hpp and the grid's parallel_for (threads.hpp) on real training
// runs: exact, deterministic facts only.
#include <cmath>
#include <vector>

#include "check.hpp"
#include "tiny_run.hpp"
#include "engine/engine.hpp"
#include "experiments/lib/threads.hpp"
#include "experiments/lib/training.hpp"

namespace test_experiments_training {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::experiments;
using namespace gs::test;

TEST_CASE("verdict_of: diverged above log V + margin or not finite, stuck above H1 - margin", "[experiments]") {
  const Thresholds t{std::log(16.0), 2.7, 0.05};  // log 16 = 2.7726
  REQUIRE(verdict_of(NAN, t) == Verdict::diverged);
  REQUIRE(verdict_of(INFINITY, t) == Verdict::diverged);
  REQUIRE(verdict_of(std::log(16.0) + 0.0501, t) == Verdict::diverged);
  REQUIRE(verdict_of(std::log(16.0) + 0.0499, t) == Verdict::stuck);
  REQUIRE(verdict_of(2.6501, t) == Verdict::stuck);
  REQUIRE(verdict_of(2.6499, t) == Verdict::trained);
  REQUIRE(verdict_of(0.1, t) == Verdict::trained);
  REQUIRE(to_string(Verdict::stuck) == "stuck");
}

TEST_CASE("freeze_blocks: after updates every block parameter and ln_f is at its initial value, the embeddings "
          "and the head have moved, and beats_frozen needs the margin", "[experiments]") {
  const nn::Corpus c = tiny_corpus();
  for (const std::string placement : {"post", "pre"}) {
    nn::TransformerLM model(run_config(placement));
    nn::Adam adam(model.named_parameters(), adam_options());
    std::vector<Array> before;
    for (const nn::NamedParameter& p : model.named_parameters()) before.push_back(p.parameter.value());
    freeze_blocks(adam);
    losses(model, adam, tiny_setup(c), 0, 4);
    std::size_t held = 0, moved = 0;
    const std::vector<nn::NamedParameter> after = model.named_parameters();
    for (std::size_t i = 0; i < after.size(); ++i) {
      const bool same = xt::all(xt::equal(after[i].parameter.value(), before[i]));
      if (is_block_parameter(after[i].name)) {
        CHECK(same);
        held += same;
      } else {
        CHECK_FALSE(same);  // tok_emb, pos_emb, head learn
        moved += !same;
      }
    }
    CHECK(held > 0);
    CHECK(moved >= 3);
  }
  CHECK(is_block_parameter("blocks.0.attn.q.weight"));
  CHECK(is_block_parameter("ln_f.weight"));
  CHECK_FALSE(is_block_parameter("tok_emb.weight"));
  CHECK_FALSE(is_block_parameter("head.weight"));
  CHECK(beats_frozen(2.0, 2.1, 0.05));
  CHECK_FALSE(beats_frozen(2.06, 2.1, 0.05));  // below frozen, but not by the margin
  CHECK_FALSE(beats_frozen(NAN, 2.1, 0.05));
  CHECK_FALSE(beats_frozen(2.0, NAN, 0.05));
}

TEST_CASE("parallel_for: every index once, and runs on threads equal runs on one", "[experiments]") {
  const nn::Corpus c = tiny_corpus();
  const std::vector<std::string> placements = {"post", "pre", "deepnorm"};
  std::vector<std::vector<double>> serial(placements.size()), threaded(placements.size());
  parallel_for(placements.size(), 1, [&](std::size_t i) { serial[i] = fresh_run(c, placements[i], 3); });
  parallel_for(placements.size(), 3, [&](std::size_t i) { threaded[i] = fresh_run(c, placements[i], 3); });
  REQUIRE(serial == threaded);
  std::vector<int> hits(50, 0);
  parallel_for(hits.size(), 4, [&](std::size_t i) { ++hits[i]; });
  REQUIRE(hits == std::vector<int>(50, 1));
  REQUIRE_THROWS_WITH(parallel_for(5, 2,
                                   [](std::size_t i) {
                                     if (i == 2) throw Error("index 2");
                                   }),
                      Catch::Contains("index 2"));
}

}  // namespace test_experiments_training
