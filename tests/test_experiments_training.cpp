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
