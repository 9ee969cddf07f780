// The training pieces that train, warmup and dynamics share (experiments/lib/training.hpp): exact,
// deterministic facts only -- verdict thresholds, entropies, and that a run is a function of its seed.
#include <cmath>
#include <filesystem>
#include <vector>

#include "check.hpp"
#include "engine/engine.hpp"
#include "experiments/lib/grid.hpp"
#include "experiments/lib/training.hpp"
#include "nn/io/checkpoint.hpp"

using namespace gs;
using namespace gs::experiments;

namespace {

nn::ModelConfig tiny_config(const std::string& placement) {
  nn::ModelConfig c{.vocab = 8, .context = 8, .d_model = 8, .heads = 2, .layers = 2, .seed = 3};
  nn::apply_placement(c, placement);
  return c;
}

Corpus tiny_corpus() {
  CorpusOptions o;
  o.train_tokens = 4096;
  o.validation_tokens = 512;
  return build_corpus(o, 8, 3, 8);  // vocab 8, seed 3, seq 8
}

StepSetup tiny_setup(const Corpus& corpus) {
  return StepSetup{&corpus.data, 4, 8, 3, nn::Schedule{nn::ScheduleKind::warmup, 1e-2, 2, 6, 0.1}, 0.0};
}

nn::AdamOptions adam_options() { return nn::AdamOptions{0.9, 0.98, 1e-8, 0.0, false}; }

// The losses of steps [from, to) of a run continuing with `model` and `adam`.
std::vector<double> losses(nn::TransformerLM& model, nn::Adam& adam, const StepSetup& setup, std::size_t from,
                           std::size_t to) {
  std::vector<double> out;
  for (std::size_t step = from; step < to; ++step) out.push_back(train_step(model, adam, setup, step).loss);
  return out;
}

std::vector<double> fresh_run(const Corpus& corpus, const std::string& placement, std::size_t steps) {
  nn::TransformerLM model(tiny_config(placement));
  nn::Adam adam(model.named_parameters(), adam_options());
  return losses(model, adam, tiny_setup(corpus), 0, steps);
}

}  // namespace

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

TEST_CASE("unigram_entropy is the entropy of the token frequencies", "[experiments]") {
  REQUIRE(unigram_entropy({0, 0, 1, 1}, 4) == Approx(std::log(2.0)));
  REQUIRE(unigram_entropy({2, 2, 2}, 4) == 0.0);
  REQUIRE(unigram_entropy({0, 1, 2, 3}, 4) == Approx(std::log(4.0)));
  const Corpus c = tiny_corpus();
  REQUIRE(c.uniform == Approx(std::log(8.0)));
  REQUIRE(c.unigram <= c.uniform + 1e-12);
  REQUIRE(c.floor < c.unigram);
}

TEST_CASE("training_batch depends only on (seed, step)", "[experiments]") {
  const Corpus c = tiny_corpus();
  const nn::Batch a = training_batch(c.data, 4, 8, 3, 5), b = training_batch(c.data, 4, 8, 3, 5);
  const bool same_inputs = a.inputs == b.inputs, same_targets = a.targets == b.targets;
  REQUIRE(same_inputs);
  REQUIRE(same_targets);
  const bool other_step = training_batch(c.data, 4, 8, 3, 6).inputs == a.inputs;
  const bool other_seed = training_batch(c.data, 4, 8, 4, 5).inputs == a.inputs;
  REQUIRE_FALSE(other_step);
  REQUIRE_FALSE(other_seed);
}

TEST_CASE("the same seed gives the same losses, bit for bit", "[experiments]") {
  const Corpus c = tiny_corpus();
  for (const std::string p : {"post", "pre"}) {
    const std::vector<double> first = fresh_run(c, p, 4), second = fresh_run(c, p, 4);
    REQUIRE(first == second);
    REQUIRE(std::isfinite(first.back()));
  }
}

TEST_CASE("a run resumed from a checkpoint continues exactly as the uninterrupted run", "[experiments]") {
  const Corpus c = tiny_corpus();
  const StepSetup setup = tiny_setup(c);
  const std::vector<double> whole = fresh_run(c, "post", 6);

  const auto dir = std::filesystem::temp_directory_path() / "gradscope_test_resume";
  std::filesystem::remove_all(dir);
  const nn::ModelConfig config = tiny_config("post");
  std::vector<double> resumed;
  {
    nn::TransformerLM model(config);
    nn::Adam adam(model.named_parameters(), adam_options());
    resumed = losses(model, adam, setup, 0, 3);
    nn::save_checkpoint(dir, "test", model, config, 3, &adam);
  }
  nn::ModelConfig other = config;
  other.seed = 99;  // a different init, overwritten by the checkpoint
  nn::TransformerLM model(other);
  nn::Adam adam(model.named_parameters(), adam_options());
  nn::load_checkpoint(dir, model, config, &adam);
  for (double l : losses(model, adam, setup, 3, 6)) resumed.push_back(l);
  std::filesystem::remove_all(dir);
  REQUIRE(resumed == whole);
}

TEST_CASE("parallel_for: every index once, and runs on threads equal runs on one", "[experiments]") {
  const Corpus c = tiny_corpus();
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
