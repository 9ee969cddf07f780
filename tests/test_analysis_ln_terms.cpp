// LayerNorm's backward split into its three terms and RMSNorm's into its two (analysis/ln_terms.hpp):
// the terms sum to the fused op's backward and to the gradient of the composite form built from engine
// ops; the center term is constant along each row and the radial term is a multiple of x_hat; per norm
// site of a model, the sum is what the norm sent back to its input in the ordinary backward.
#include <string>
#include <vector>

#include "check.hpp"
#include "engine/engine.hpp"
#include "engine/tools/inspect.hpp"
#include "analysis/ln_terms.hpp"
#include "nn/layernorm.hpp"
#include "nn/rmsnorm.hpp"
#include "nn_gradcheck.hpp"

namespace test_analysis_ln_terms {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::analysis;

namespace {

const IndexArray ln_ids = {{0, 3, 4}, {2, 2, 1}};
const IndexArray ln_targets = {{3, 4, 0}, {2, 1, 1}};

}  // namespace

TEST_CASE("layernorm_terms: the three terms sum to LayerNorm's backward, fused and composite", "[analysis][ln_terms]") {
  const Array x = 2.0 * test::randn({2, 3, 5}, 1) + 0.5;  // rows with a mean and a scale of their own
  const Array w = test::randn({5}, 2);
  const Array g = test::randn({2, 3, 5}, 3);
  const NormTerms t = layernorm_terms(x, w, g, 1e-5);
  const Array sum = t.scale + t.center + t.radial;

  nn::LayerNormStats stats;
  nn::layernorm_forward(x, w, xt::zeros_like(w), 1e-5, stats);
  REQUIRE(xt::allclose(sum, nn::layernorm_backward(g, x, w, stats)[0], 0.0, test::tol(1e-13, 1e-5)));

  Tape tape;
  TapeScope scope(tape);
  Var xv = tape.leaf(x);
  const Var y = nn::layernorm_composite(xv, tape.leaf(w), tape.leaf(xt::zeros_like(w)), 1e-5);
  y.backward(g);
  REQUIRE(xt::allclose(sum, xv.grad(), 0.0, test::tol(1e-12, 1e-5)));

  // Per row: center is one number, radial a multiple of x_hat, and the sum is orthogonal to the ones
  // vector and (exactly with eps = 0, when mean(x_hat^2) = 1) to x_hat.
  const NormTerms t0 = layernorm_terms(x, w, g, 0.0);
  const Array sum0 = t0.scale + t0.center + t0.radial;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t r = 0; r < 3; ++r) {
      const Array row_x = xt::view(x, b, r, xt::all());
      const Array x_hat = (row_x - xt::mean(row_x)()) / std::sqrt(xt::variance(row_x)());
      const Array center = xt::view(t0.center, b, r, xt::all());
      const Array radial = xt::view(t0.radial, b, r, xt::all());
      const Array dx = xt::view(sum0, b, r, xt::all());
      REQUIRE(xt::amax(center)() - xt::amin(center)() < 1e-15);
      const double c = xt::sum(radial * x_hat)() / xt::sum(x_hat * x_hat)();
      REQUIRE(xt::allclose(radial, c * x_hat, 0.0, test::tol(1e-13, 1e-5)));
      REQUIRE(std::abs(xt::sum(dx)()) < test::tol(1e-12, 1e-5));
      REQUIRE(std::abs(xt::sum(dx * x_hat)()) < test::tol(1e-12, 1e-5));
    }
  REQUIRE_THROWS_WITH(layernorm_terms(x, Array{1.0, 2.0}, g, 1e-5), Catch::Contains("layernorm_terms") &&
                                                                         Catch::Contains("(2, 3, 5)") &&
                                                                         Catch::Contains("(2,)"));
}

TEST_CASE("rmsnorm_terms: scale and radial sum to RMSNorm's backward, fused and composite", "[analysis][ln_terms]") {
  const Array x = 2.0 * test::randn({2, 3, 5}, 4) + 0.5;  // rows with a mean: RMSNorm does not remove it
  const Array w = test::randn({5}, 5);
  const Array g = test::randn({2, 3, 5}, 6);
  const NormTerms t = rmsnorm_terms(x, w, g, 1e-5);
  REQUIRE(xt::amax(xt::abs(t.center))() == 0.0);  // no center term
  const Array sum = t.scale + t.radial;

  Array rstd;
  nn::rmsnorm_forward(x, w, 1e-5, rstd);
  REQUIRE(xt::allclose(sum, nn::rmsnorm_backward(g, x, w, rstd)[0], 0.0, test::tol(1e-13, 1e-5)));

  Tape tape;
  TapeScope scope(tape);
  Var xv = tape.leaf(x);
  nn::rmsnorm_composite(xv, tape.leaf(w), 1e-5).backward(g);
  REQUIRE(xt::allclose(sum, xv.grad(), 0.0, test::tol(1e-12, 1e-5)));

  // Per row: radial is a multiple of x_hat = x / rms, and with eps = 0 the sum is orthogonal to x_hat
  // (mean(x_hat^2) = 1), but not to the ones vector: the row's mean is not removed.
  const NormTerms t0 = rmsnorm_terms(x, w, g, 0.0);
  const Array sum0 = t0.scale + t0.radial;
  double largest_mean = 0.0;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t r = 0; r < 3; ++r) {
      const Array row_x = xt::view(x, b, r, xt::all());
      const Array x_hat = row_x / std::sqrt(xt::mean(row_x * row_x)());
      const Array radial = xt::view(t0.radial, b, r, xt::all());
      const Array dx = xt::view(sum0, b, r, xt::all());
      const double c = xt::sum(radial * x_hat)() / xt::sum(x_hat * x_hat)();
      REQUIRE(xt::allclose(radial, c * x_hat, 0.0, test::tol(1e-13, 1e-5)));
      REQUIRE(std::abs(xt::sum(dx * x_hat)()) < test::tol(1e-12, 1e-5));
      largest_mean = std::max(largest_mean, std::abs(xt::mean(dx)()));
    }
  REQUIRE(largest_mean > 1e-3);
  REQUIRE_THROWS_WITH(rmsnorm_terms(x, Array{1.0, 2.0}, g, 1e-5), Catch::Contains("rmsnorm_terms") &&
                                                                       Catch::Contains("(2, 3, 5)") &&
                                                                       Catch::Contains("(2,)"));
}

TEST_CASE("norm_site_terms: every LayerNorm and RMSNorm site of post and pre, summing to what it sent its input",
          "[analysis][ln_terms]") {
  for (const char* spec : {"post", "pre", "pre/rms", "post/rms", "pre/dyt"}) {
    INFO(spec);
    nn::TransformerLM model(test::gradcheck_config(spec));
    test::jitter(model.named_parameters(), 0.2, 5);  // weights away from 1, so that g_hat is not g
    Tape tape;
    TapeScope scope(tape);
    tape.keep_contributions = true;
    model.loss(ln_ids, ln_targets).backward();
    const std::vector<NormSiteTerms> sites = norm_site_terms(model);
    const std::vector<nn::NormTrace> traces = model.norm_traces();
    const std::string kind(spec);
    if (kind == "pre/dyt") {
      REQUIRE(sites.empty());  // DyT has no statistics: no terms
      continue;
    }
    const bool rms = kind.ends_with("/rms");
    REQUIRE(sites.size() == (kind.starts_with("post") ? 4u : 5u));  // pre adds ln_f
    for (std::size_t s = 0; s < sites.size(); ++s) {
      INFO(sites[s].name);
      REQUIRE(sites[s].name == traces[s].name);
      double sent = -1.0;  // |what the norm's entry sent into its input|
      for (const ContributionInfo& c : contributions(traces[s].in))
        if (c.from == traces[s].out.index()) sent = c.norm;
      REQUIRE(sites[s].dx == Approx(sent).epsilon(test::tol(1e-12, 1e-5)));
      REQUIRE(sites[s].g == Approx(norm(traces[s].out.grad())).epsilon(1e-15));
      REQUIRE(sites[s].has_center == !rms);
      if (rms)
        REQUIRE(sites[s].center == 0.0);
      else
        REQUIRE(sites[s].center > 0.0);
      REQUIRE(sites[s].radial > 0.0);
    }
  }
}

}  // namespace test_analysis_ln_terms
