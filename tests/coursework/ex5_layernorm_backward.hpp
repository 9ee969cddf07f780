// Exercise 5 (docs/coursework.md#ex5): LayerNorm's fused backward, derived and written by hand.
// Forward, per row (one position) of x (..., d), with weight w (d,) and bias b (d,):
//   mu = (1/d) sum_i x_i,   var = (1/d) sum_i (x_i - mu)^2,   rstd = 1 / sqrt(var + eps)
//   x_hat_i = (x_i - mu) rstd,   y_i = x_hat_i w_i + b_i
// Backward, per row, with g = dL/dy and g_hat = g * w (derive it: docs/layernorm.md does):
//   dL/dx = rstd * (g_hat - mean(g_hat) - x_hat * mean(g_hat * x_hat))
//   dL/dw = the sum over rows of g * x_hat,   dL/db = the sum over rows of g
// The first term is the gradient with mu and var held fixed; the two means are what flows back through
// mu and through var. One pass over each row for the two means, one for dL/dx.
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
