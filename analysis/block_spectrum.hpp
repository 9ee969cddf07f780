// The largest singular values of one block's input-output Jacobian over a whole sequence: how much
// the block can amplify a change of its input, in the direction it amplifies most.
//
// The block maps its input x (1, T, C) to its output y (1, T, C); attention mixes the positions, so its
// Jacobian J = dy/dx is one (T C) x (T C) matrix, not a block per position. Its singular values are the
// square roots of the eigenvalues of the symmetric J^T J, whose largest Lanczos finds
// (analysis/eigen.hpp) from products
//
//   J^T J v = vjp(jvp(v))
//   vjp(u) = J^T u                                 exact: one backward of y seeded with u
//   jvp(v) = J v ~ (f(x + h v) - f(x - h v)) / 2h  a central difference (the engine has no forward mode),
//                                                  truncation error (h^2 / 6) |D^3 f[v, v, v]|
//
// with h = cbrt(eps) max(|x|, 1) for a unit v (eps = 2^-52; the same balance of truncation against
// rounding as analysis/hvp.hpp). The finite difference's error is stated, not assumed: for the top
// singular vector v_1, jvp_error = |jvp_h(v_1) - jvp_{h/2}(v_1)| / |jvp_{h/2}(v_1)|, which estimates
// 3/4 of the relative truncation error at step h (it falls by 4 when h halves) plus the rounding of both.
//
// Pre-LN's block is y = x + F(x), so J = I + J_F; Post-LN's ends in a LayerNorm, y = LN(x + F(x)), so
// J = J_LN (I + J_F), and J_LN removes the row's mean and its scale direction (rank C - 2 per position
// at most): such a J has singular values near 0 as well as its largest.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/array.hpp"
#include "nn/block.hpp"

namespace gs::analysis {

struct SpectrumOptions {
  std::size_t count = 3;             // how many of the largest singular values
  std::size_t max_iterations = 40;   // J^T J products at most (each: two forwards and one backward)
  double tolerance = float32_build ? 1e-2 : 1e-6;  // Lanczos's relative residual on sigma^2 (analysis/eigen.hpp)
  unsigned seed = 1;                 // of Lanczos's start vector
};

struct BlockSpectrum {
  std::vector<double> sigma;     // the `count` largest singular values of J, largest first
  std::vector<double> residual;  // Lanczos's |J^T J y - sigma^2 y| for each
  bool converged = false;        // every one within the tolerance
  std::size_t products = 0;      // J^T J products made
  double step = 0.0;             // h of the central differences
  double jvp_error = 0.0;        // |jvp_h(v_1) - jvp_{h/2}(v_1)| / |jvp_{h/2}(v_1)|, as above
};

// The spectrum of `block`'s Jacobian at x (1, T, C). The block's forward runs on a tape of its own, in
// grad mode, with the block's interventions and branch control as they are set (a backward
// intervention changes the vjp, so the spectrum is then of the intervened backward); it leaves the
// current tape, the block's parameters and their gradients as it found them, but its `last` trace
// points into the tape it made. Throws gs::Error naming the shapes unless x is (1, T, C) with C the
// block's width.
BlockSpectrum block_spectrum(nn::Block& block, const Array& x, const SpectrumOptions& options = {});

}  // namespace gs::analysis
