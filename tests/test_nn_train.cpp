// The training loop of nn/train.hpp and the corpus of nn/data/corpus.hpp: exact, deterministic facts
// only -- entropies, that a batch and a run are functions of their seed, that a resumed run continues
// exactly, and the order of a step's hooks.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "check.hpp"
#include "tiny_run.hpp"
#include "engine/engine.hpp"
#include "nn/data/corpus.hpp"
#include "nn/io/checkpoint.hpp"
#include "nn/train.hpp"

namespace test_nn_train {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::test;

TEST_CASE("unigram_entropy is the entropy of the token frequencies", "[train]") {
  REQUIRE(nn::unigram_entropy({0, 0, 1, 1}, 4) == Approx(std::log(2.0)));
  REQUIRE(nn::unigram_entropy({2, 2, 2}, 4) == 0.0);
  REQUIRE(nn::unigram_entropy({0, 1, 2, 3}, 4) == Approx(std::log(4.0)));
  const nn::Corpus c = tiny_corpus();
  REQUIRE(c.uniform == Approx(std::log(8.0)));
  REQUIRE(c.unigram <= c.uniform + 1e-12);
  REQUIRE(c.floor < c.unigram);
}

TEST_CASE("training_batch depends only on (seed, step)", "[train]") {
  const nn::Corpus c = tiny_corpus();
  const nn::Batch a = nn::training_batch(c.data, 4, 8, 3, 5), b = nn::training_batch(c.data, 4, 8, 3, 5);
  const bool same_inputs = a.inputs == b.inputs, same_targets = a.targets == b.targets;
  REQUIRE(same_inputs);
  REQUIRE(same_targets);
  const bool other_step = nn::training_batch(c.data, 4, 8, 3, 6).inputs == a.inputs;
  const bool other_seed = nn::training_batch(c.data, 4, 8, 4, 5).inputs == a.inputs;
  REQUIRE_FALSE(other_step);
  REQUIRE_FALSE(other_seed);
}

TEST_CASE("the same seed gives the same losses, bit for bit", "[train]") {
  const nn::Corpus c = tiny_corpus();
  for (const std::string p : {"post", "pre"}) {
    const std::vector<double> first = fresh_run(c, p, 4), second = fresh_run(c, p, 4);
    REQUIRE(first == second);
    REQUIRE(std::isfinite(first.back()));
  }
}

TEST_CASE("a run resumed from a checkpoint continues exactly as the uninterrupted run", "[train]") {
  const nn::Corpus c = tiny_corpus();
  const nn::StepSetup setup = tiny_setup(c);
  const std::vector<double> whole = fresh_run(c, "post", 6);

  const auto dir = std::filesystem::temp_directory_path() / "gradscope_test_resume";
  std::filesystem::remove_all(dir);
  const nn::ModelConfig config = run_config("post");
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

TEST_CASE("train_step calls its hooks: before every step, after the backward pass and after the update", "[train]") {
  const nn::Corpus c = tiny_corpus();
  nn::StepSetup setup = tiny_setup(c);
  std::vector<std::string> calls;
  setup.hooks.before = [&](std::size_t step) { calls.push_back("before " + std::to_string(step)); };
  setup.hooks.after_backward = [&](std::size_t step, double loss) {
    REQUIRE(std::isfinite(loss));
    calls.push_back("backward " + std::to_string(step));
  };
  setup.hooks.after_update = [&](std::size_t step, double lr) {
    REQUIRE(lr == setup.schedule.lr(step));
    calls.push_back("update " + std::to_string(step));
  };
  nn::TransformerLM model(run_config("pre"));
  nn::Adam adam(model.named_parameters(), adam_options());
  const std::vector<double> hooked = losses(model, adam, setup, 0, 2);
  REQUIRE(calls == std::vector<std::string>{"before 0", "backward 0", "update 0", "before 1", "backward 1", "update 1"});
  REQUIRE(hooked == fresh_run(c, "pre", 2));  // the hooks only watch
  setup.hooks.before = [](std::size_t step) { throw Error("stop at " + std::to_string(step)); };
  REQUIRE_THROWS_WITH(nn::train_step(model, adam, setup, 2), Catch::Contains("stop at 2"));
}

}  // namespace test_nn_train
