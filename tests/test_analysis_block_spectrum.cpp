// The largest singular values of a block's Jacobian by Lanczos (analysis/block_spectrum.hpp), checked
// against the singular values of the whole Jacobian built row by row from backward passes alone (row i
// of J is J^T e_i) and decomposed by LAPACK's SVD.
#include <algorithm>
#include <string>
#include <vector>

#include <xtensor-blas/xlinalg.hpp>

#include "check.hpp"
#include "engine/engine.hpp"
#include "analysis/block_spectrum.hpp"
#include "nn/transformer_lm.hpp"
#include "nn_gradcheck.hpp"

namespace test_analysis_block_spectrum {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::analysis;

namespace {

// J = dy/dx of block.forward at x (1, T, C), (T C) x (T C), from T C backward passes.
Array jacobian(nn::Block& block, const Array& x) {
  Tape tape;
  TapeScope scope(tape);
  tape.accumulate_into_parameters = false;
  const std::size_t n = x.size();
  Array J = xt::zeros<Real>({n, n});
  for (std::size_t i = 0; i < n; ++i) {
    tape.reset();
    const Var xv = tape.leaf(x);
    const Var y = block.forward(xv);
    Array seed = xt::zeros<Real>(shape_of(x));
    seed.data()[i] = 1.0;
    y.backward(seed);
    for (std::size_t j = 0; j < n; ++j) J(i, j) = xv.grad().data()[j];  // row i: dy_i / dx
  }
  return J;
}

}  // namespace

TEST_CASE("block_spectrum: the largest singular values of a block's Jacobian match the full SVD",
          "[analysis][block_spectrum]") {
  for (const char* spec : {"post", "pre", "post/rms", "peri"}) {
    INFO(spec);
    nn::TransformerLM model(test::gradcheck_config(spec));
    test::jitter(model.named_parameters(), 0.3, 7);  // away from init's symmetries
    nn::Block& block = *model.blocks[0];
    const std::size_t C = block.attn.dim;
    const Array x = 1.5 * test::randn({1, 3, C}, 11) + 0.3;
    const Array grad_before = model.named_parameters().front().parameter.grad();

    const BlockSpectrum s = block_spectrum(block, x);
    const Array sv = std::get<1>(xt::linalg::svd(jacobian(block, x), false, false));  // descending
    REQUIRE(s.converged);
    REQUIRE(s.sigma.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
      INFO("sigma " << i << ": lanczos " << s.sigma[i] << ", svd " << sv(i));
      REQUIRE(s.sigma[i] == Approx(sv(i)).epsilon(test::tol(1e-6, 1e-3)));
    }
    REQUIRE(s.sigma[0] > s.sigma[2]);  // not a degenerate spectrum that any vector would match
    REQUIRE(s.jvp_error > 0.0);
    REQUIRE(s.jvp_error < test::tol(1e-6, 1e-3));
    REQUIRE(s.products <= SpectrumOptions{}.max_iterations);
    const bool grads_unchanged = model.named_parameters().front().parameter.grad() == grad_before;
    REQUIRE(grads_unchanged);
  }
}

TEST_CASE("block_spectrum: Pre-LN's block at zero branches is the identity", "[analysis][block_spectrum]") {
  // rezero at init multiplies every branch by a = 0: y = x, J = I, every singular value 1.
  nn::TransformerLM model(test::gradcheck_config("rezero"));
  const Array x = test::randn({1, 3, model.blocks[0]->attn.dim}, 3);
  const BlockSpectrum s = block_spectrum(*model.blocks[0], x);
  for (double sigma : s.sigma) REQUIRE(sigma == Approx(1.0).epsilon(test::tol(1e-9, 1e-3)));
}

TEST_CASE("block_spectrum: refuses an input that is not one sequence of the block's width", "[analysis][block_spectrum]") {
  nn::TransformerLM model(test::gradcheck_config("pre"));
  const std::size_t C = model.blocks[0]->attn.dim;
  REQUIRE_THROWS_WITH(block_spectrum(*model.blocks[0], xt::zeros<Real>(Shape{2, 3, C})),
                      Catch::Contains("block_spectrum") && Catch::Contains("(2, 3, " + std::to_string(C) + ")"));
  REQUIRE_THROWS_WITH(block_spectrum(*model.blocks[0], xt::zeros<Real>(Shape{1, 3, C + 1})),
                      Catch::Contains("block_spectrum") && Catch::Contains("C = " + std::to_string(C)));
}

}  // namespace test_analysis_block_spectrum
