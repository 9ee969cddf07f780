// Exercise 5 (docs/coursework.md#ex5): LayerNorm's fused backward, derived and written by hand.
// Forward, per row (one position) of x (..., d), with weight w (d,) and bias b (d,):
//   mu = (1/d) sum_i x_i,   var = (1/d) sum_i (x_i - mu)^2,   rstd = 1 / sqrt(var + eps)
//   x_hat_i = (x_i - mu) rstd,   y_i = x_hat_i w_i + b_i
// Derive, per row, with g = dL/dy: dL/dw and dL/db (sums over rows), then dL/dx. x_i reaches y
// three ways: directly through x_hat_i, through mu, and through var; each contributes a term. Work
// it out on paper first. Stuck? docs/coursework.md#ex5 has hints, the last of them the formula.
// Module 2, the layers. Difficulty: 3/3. Time: about 60 min.
#pragma once

#include "engine/array.hpp"
#include "engine/tape.hpp"

namespace gs::coursework {

// grad = dL/dy (..., d), x (..., d), weight (d,) -> {dx (..., d), dweight (d,), dbias (d,)}, with
// eps added to the variance as above. Plain arrays in, plain arrays out: no tape. Do not call
// nn::layernorm_backward: this exercise is writing it.
Grads layernorm_backward(const Array& grad, const Array& x, const Array& weight, double eps = 1e-5);

}  // namespace gs::coursework
