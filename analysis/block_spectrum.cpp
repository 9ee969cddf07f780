#include "analysis/block_spectrum.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "analysis/eigen.hpp"
#include "engine/tape.hpp"

namespace gs::analysis {
namespace {

// y = f(x) = block.forward(x) with no gradient recorded: (1, T, C) -> (1, T, C).
Array block_value(nn::Block& block, Tape& tape, const Array& x) {
  tape.reset();
  NoGradScope no_grad(tape);
  return block.forward(tape.constant(x)).value();
}

// J v ~ (f(x + h v) - f(x - h v)) / 2h, v of x's shape.
Array jvp(nn::Block& block, Tape& tape, const Array& x, const Array& v, double h) {
  const Array plus = block_value(block, tape, x + h * v);
  const Array minus = block_value(block, tape, x - h * v);
  return (plus - minus) / (2.0 * h);
}

// J^T u: the gradient at x of <f(x), u>, by one backward of y seeded with u.
Array vjp(nn::Block& block, Tape& tape, const Array& x, const Array& u) {
  tape.reset();
  const Var xv = tape.leaf(x);
  block.forward(xv).backward(u);
  return xv.grad();
}

}  // namespace

BlockSpectrum block_spectrum(nn::Block& block, const Array& x, const SpectrumOptions& options) {
  const std::size_t C = block.attn.dim;
  if (x.dimension() != 3 || x.shape()[0] != 1 || x.shape()[2] != C)
    throw Error("block_spectrum: needs the block's input x (1, T, C) with C = " + std::to_string(C) + ", got " +
                shape_str(shape_of(x)));
  Tape tape;  // the block's passes, apart from the caller's tape
  TapeScope scope(tape);
  tape.accumulate_into_parameters = false;  // the parameters' gradients stay as they were

  const Shape shape = shape_of(x);
  const std::size_t n = x.size();
  const double h = std::cbrt(std::numeric_limits<Real>::epsilon()) * std::max(norm(x), 1.0);
  // The operator on flat vectors of length n = T C: v -> J^T J v.
  const SymmetricOperator jtj = [&](const Array& flat) {
    const Array v = xt::reshape_view(flat, shape);
    const Array Jv = jvp(block, tape, x, v, h);
    return Array(xt::flatten(vjp(block, tape, x, Jv)));
  };
  LanczosOptions lo;
  lo.count = options.count;
  lo.max_iterations = options.max_iterations;
  lo.tolerance = options.tolerance;
  lo.seed = options.seed;
  const LanczosResult r = lanczos(jtj, n, lo);

  BlockSpectrum out;
  out.products = r.iterations;
  out.converged = r.converged;
  out.step = h;
  for (const Eigenpair& p : r.pairs) {
    out.sigma.push_back(std::sqrt(std::max(p.value, 0.0)));  // J^T J is positive semidefinite
    out.residual.push_back(p.residual);
  }
  const Array v1 = xt::reshape_view(r.pairs.front().vector, shape);
  const Array at_h = jvp(block, tape, x, v1, h), at_half = jvp(block, tape, x, v1, h / 2.0);
  const double size = norm(at_half);
  out.jvp_error = size > 0.0 ? norm(Array(at_h - at_half)) / size : 0.0;  // J v_1 = 0: J is 0
  return out;
}

}  // namespace gs::analysis
