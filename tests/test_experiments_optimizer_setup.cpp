// OptimizerSetup (experiments/lib/training.hpp): what --optimizer, --adam-beta1/2, --adam-eps, --hold
// and --intervene set reaches the model, the optimizer and the schedule.
#include <string>
#include <vector>

#include "check.hpp"
#include "tiny_run.hpp"
#include "engine/engine.hpp"
#include "experiments/lib/training.hpp"

namespace test_experiments_optimizer_setup {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::experiments;
using gs::test::run_config;
using gs::test::tiny_corpus;

namespace {

std::vector<Array> values(nn::TransformerLM& model) {
  std::vector<Array> out;
  for (const nn::NamedParameter& p : model.named_parameters()) out.push_back(p.parameter.value());
  return out;
}

}  // namespace

TEST_CASE("OptimizerSetup's defaults are the Adam(0.9, 0.98, eps 1e-8) warmup and dynamics always used", "[training][optimizer]") {
  nn::TransformerLM model(run_config("post"));
  const auto optimizer = OptimizerSetup{}.make(model);
  REQUIRE(optimizer->name() == "adam");
  const std::vector<std::pair<std::string, double>> expected = {{"beta1", 0.9}, {"beta2", 0.98}, {"eps", 1e-8}, {"weight_decay", 0.0}};
  REQUIRE(optimizer->hyperparameters() == expected);
  REQUIRE_FALSE(model.interventions().any());
}

TEST_CASE("OptimizerSetup passes the optimizer, betas, eps and interventions on", "[training][optimizer]") {
  OptimizerSetup s;
  s.optimizer = "radam";
  s.beta1 = 0.8, s.beta2 = 0.999, s.eps = 1e-6;
  s.intervene = {"detach-skip", "freeze-ln"};
  nn::TransformerLM model(run_config("post"));
  const auto optimizer = s.make(model);
  REQUIRE(optimizer->name() == "radam");
  const std::vector<std::pair<std::string, double>> expected = {{"beta1", 0.8}, {"beta2", 0.999}, {"eps", 1e-6}, {"weight_decay", 0.0}};
  REQUIRE(optimizer->hyperparameters() == expected);
  REQUIRE(model.interventions().detach_skip);
  REQUIRE(model.interventions().freeze_ln);
  REQUIRE_FALSE(model.interventions().detach_branch);
  REQUIRE(s.text() == "radam(beta1 0.8, beta2 0.999, eps 1e-06), intervene detach-skip,freeze-ln");
  s.intervene = {"none"};
  REQUIRE_FALSE(s.interventions().any());
  s.intervene = {"detach-everything"};
  REQUIRE_THROWS_WITH(s.interventions(), Catch::Contains("detach-everything"));
}

TEST_CASE("hold (--hold N): N steps move no weight but do move Adam's moments; then the schedule starts", "[training][optimizer]") {
  const nn::Corpus corpus = tiny_corpus();
  OptimizerSetup s;
  s.hold = 3;
  nn::TransformerLM model(run_config("post"));
  const auto optimizer = s.make(model);
  const nn::Schedule schedule = s.with_hold({nn::ScheduleKind::cosine, 1e-2, 2, 10, 0.1});
  REQUIRE(schedule.hold == 3);
  REQUIRE(schedule.total == 7);  // the cosine still ends at step 10
  const nn::StepSetup setup{&corpus.data, 4, 8, 3, schedule, 0.0, {}};
  const std::vector<Array> init = values(model);
  for (std::size_t step = 0; step < 3; ++step) {
    const nn::StepResult r = nn::train_step(model, *optimizer, setup, step);
    REQUIRE(r.lr == 0.0);
    const std::vector<Array> now = values(model);
    for (std::size_t i = 0; i < init.size(); ++i) REQUIRE(now[i] == init[i]);
  }
  REQUIRE(optimizer->steps() == 3);
  REQUIRE(xt::amax(xt::abs(optimizer->slot(1, 0)))() > 0.0);  // the second moment moved
  const nn::StepResult r = nn::train_step(model, *optimizer, setup, 3);
  REQUIRE(r.lr == Approx(1e-2 / 2));  // the warmup's first step, after the hold
  const std::vector<Array> now = values(model);
  bool moved = false;
  for (std::size_t i = 0; i < init.size(); ++i) moved = moved || now[i] != init[i];
  REQUIRE(moved);
}

}  // namespace test_experiments_optimizer_setup
