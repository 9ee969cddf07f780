// A run whose loss or gradient is not finite: nn's step takes no update and says so, and every binary
// that trains either refuses it naming the flag (a first step that cannot train at any rate) or, where a
// blow-up is what the experiment measures, records it as one; a measure that is degenerate in every
// point is left out of its plot, named, and the rest is drawn (docs/reliability.md, "Numbers that
// overflow").
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "experiments/lib/report.hpp"
#include "io_helpers.hpp"
#include "run_binary.hpp"
#include "tiny_run.hpp"

namespace test_non_finite {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::experiments;
using Catch::Matchers::Contains;
using test::run_binary;
namespace fs = std::filesystem;

namespace {

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

const std::vector<std::string> tiny = {"--layers", "1", "--d-model", "8", "--heads", "2", "--seq", "8", "--batch", "4",
                                       "--vocab", "8", "--eval-every", "0", "--eval-batches", "2", "--warmup", "2",
                                       "--steps", "4"};
const std::vector<std::string> tiny_grid = {"--d-model", "8", "--heads", "2", "--seq", "6", "--batch", "3",
                                            "--seeds", "1", "--jobs", "1", "--layers", "1", "--eval-batches", "1"};

}  // namespace

#ifndef GRADSCOPE_FLOAT32  // in float32 the loss itself overflows first (1e300 is no float); the norm sums in double
TEST_CASE("a gradient whose norm overflows moves no weight, and the step is not finite", "[train][non-finite]") {
  const nn::Corpus corpus = test::tiny_corpus();
  nn::TransformerLM model(test::run_config("post"));
  model.z_loss = 1e300;  // C mean (log Z)^2 is finite (about 1e300 x 4), its gradient's square is not
  nn::Adam adam(model.named_parameters(), test::adam_options());
  const Array before = model.named_parameters().front().parameter.value();
  bool updated = false;
  nn::StepSetup setup = test::tiny_setup(corpus);
  setup.hooks.after_update = [&](std::size_t, double) { updated = true; };
  const nn::StepResult r = nn::train_step(model, adam, setup, 0);
  CHECK(std::isfinite(r.loss));
  CHECK(std::isinf(r.grad_norm));
  CHECK_FALSE(r.finite());
  CHECK_FALSE(updated);  // no update was taken, so its hook did not run
  const bool unchanged = model.named_parameters().front().parameter.value() == before;
  CHECK(unchanged);
  CHECK(adam.steps() == 0);
}
#endif

TEST_CASE("a first step that is not finite is refused naming the flag; a later blow-up names the rate",
          "[reliability][non-finite][binaries]") {
  test::TempDir dir("non_finite");
  struct Case {
    std::string binary;
    std::vector<std::string> args;
    std::vector<std::string> says;
  };
  // A z-loss of 1e300 overflows float64's gradient norm; in float32 it overflows the loss itself.
  const std::string inf_at_0 = float32_build ? "the loss is inf at step 0" : "the gradient norm is inf at step 0";
  for (const Case& c : std::vector<Case>{
           {"train", with(tiny, {"--z-loss", "1e300"}),
            {"train: error: " + inf_at_0, "before any update",
             "--z-loss 1e+300 makes it"}},
           {"train", with(tiny, {"--lr", "1e300"}),
            {"train: error: the loss is nan at step 1", "the updates blew the weights up; --lr 1e+300 is the likely cause"}},
           {"lrsweep", with(tiny_grid, {"--variants", "post+z", "--z-coef", "1e300", "--lrs", "1e-3", "--steps", "3"}),
            {inf_at_0, "+z's --z-coef 1e+300 makes it"}},
           {"warmup", with(tiny_grid, {"--z-loss", "1e300", "--lrs", "1e-3", "--warmups", "0", "--steps", "3", "--window", "2"}),
            {inf_at_0, "--z-loss 1e+300 makes it"}},
           {"dynamics", with(tiny_grid, {"--z-loss", "1e300", "--warmups", "0", "--steps", "3", "--placements", "post"}),
            {inf_at_0, "--z-loss 1e+300 makes it"}},
           {"causes", with(tiny_grid, {"--rows", "scale branch 1e+300 x2", "--branch-scale", "1e300", "--control-steps",
                                       "2", "--steps", "3", "--window", "2", "--placements", "post", "--hold", "1", "--reset-step", "1"}),
            {"at step 0", "row 'scale branch 1e+300 x2' makes it"}},
       }) {
    INFO(c.binary << " " << c.args.back());
    const test::Outcome r = run_binary(c.binary, c.args, dir.path);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(lines(test::last_line(r.err)) == 1);
    for (const std::string& s : c.says) CHECK_THAT(test::last_line(r.err), Contains(s));
  }
}

TEST_CASE("a series with no point to draw is left out and named; a plot with none is not drawn", "[report][non-finite]") {
  test::TempDir dir("degenerate_plot");
  Plot plot{"update ratio", "step", "|dW|/|W|", false, true, {}};
  plot.series.push_back({"moves", {1, 2, 3}, {1e-3, 2e-3, NAN}, {}});
  plot.series.push_back({"lr 1e-320", {1, 2, 3}, {0, 0, 0}, {}});
  plot.series.push_back({"blew up", {1, 2}, {NAN, INFINITY}, {}});
  plot.series.push_back({"lr 1e308", {1, 2}, {1e308, 5e307}, {}});  // finite, but gnuplot's range ends near 1e307
  std::string note;
  const Plot kept = without_degenerate_series(plot, note);
  REQUIRE(kept.series.size() == 1);
  CHECK(kept.series[0].title == "moves");
  CHECK(note == "'lr 1e-320': every value is 0; 'blew up': every value is NaN/Inf; "
                "'lr 1e308': its points lie beyond 1e300, outside what gnuplot can draw");

  draw(plot, dir.path, "ratio");  // gnuplot fails on a log axis with no point > 0
  CHECK(fs::exists(dir.path / "ratio.png"));
  plot.series.erase(plot.series.begin());
  draw(plot, dir.path, "none");
  CHECK_FALSE(fs::exists(dir.path / "none.png"));
  CHECK_FALSE(fs::exists(dir.path / "none.dat"));
}

TEST_CASE("dynamics at a rate that moves nothing draws the plots it can and names the rest", "[reliability][non-finite][binaries]") {
  test::TempDir dir("dynamics_tiny_lr");
  const test::Outcome r = run_binary(
      "dynamics", with(tiny_grid, {"--lr", "1e-320", "--warmups", "0", "--steps", "3", "--placements", "post", "--out", "o"}),
      dir.path);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Contains("note: "));
  CHECK_THAT(r.err, Contains("every value is 0"));
  CHECK(fs::exists(dir.path / "o" / "loss.png"));
}

}  // namespace test_non_finite
