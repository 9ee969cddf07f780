// LayerNorm over the last axis, in two forms that compute the same function:
//   layernorm_composite  built from engine ops (mean, sub, mul, sqrt, div, ...), so every intermediate is
//                        an entry of the tape with its own gradient, for students to look at;
//   layernorm_fused      one tape entry "layernorm_fused" whose backward, layernorm_backward, is derived
//                        by hand in docs/layernorm.md; faster and lighter.
// The fused op's arithmetic is the pair below, on plain arrays, forward beside backward (as in llm.c),
// so that `break gs::nn::layernorm_backward` stops in gdb where the gradient is computed. Both forms
// use eps = 1e-5 and the biased variance (divide by d, not d - 1).
#pragma once

#include <cstddef>

#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "nn/norm.hpp"

namespace gs::nn {

// What the forward pass keeps for the backward pass, one number per row (position) each.
struct LayerNormStats {
  Array mu;    // (rows,)  the row means
  Array rstd;  // (rows,)  1 / sqrt(var + eps)
};

// x (..., d), weight (d,), bias (d,) -> y (..., d), per row:
//   mu = (1/d) sum_i x_i,  var = (1/d) sum_i (x_i - mu)^2,  rstd = 1 / sqrt(var + eps)
//   x_hat_i = (x_i - mu) * rstd,  y_i = x_hat_i * w_i + b_i;   mu and rstd go to `stats`
Array layernorm_forward(const Array& x, const Array& weight, const Array& bias, double eps, LayerNormStats& stats);
// grad = dL/dy (..., d), x (..., d), weight (d,) -> {dx (..., d), dw (d,), db (d,)}, per row with
// g_hat = g * w:  dx = rstd * (g_hat - mean(g_hat) - x_hat * mean(g_hat * x_hat)),
// dw = sum over rows of g * x_hat,  db = sum over rows of g.  `mode` changes dx only (NormGrad).
Grads layernorm_backward(const Array& grad, const Array& x, const Array& weight, const LayerNormStats& stats,
                         NormGrad mode = {});

// LayerNorm, x (..., d), weight (d,), bias (d,):
//   mu = mean(x), var = mean((x - mu)^2), sigma = sqrt(var + eps), x_hat = (x - mu) / sigma,
//   y = x_hat * weight + bias
// `mode` changes how the gradient reaches x (NormGrad), never the value.
Var layernorm_composite(const Var& x, const Var& weight, const Var& bias, double eps = 1e-5, NormGrad mode = {},
                        Site site = Site::current());
Var layernorm_fused(const Var& x, const Var& weight, const Var& bias, double eps = 1e-5, NormGrad mode = {},
                    Site site = Site::current());

class LayerNorm : public NormLayer {
 public:
  explicit LayerNorm(std::size_t d, bool fused = true);  // weight ones, bias zeros
  Var forward(const Var& x, Site site = Site::current()) const override;  // (..., d) -> (..., d)

  double eps = 1e-5;
  Parameter weight;  // [d]
  Parameter bias;    // [d]
};

}  // namespace gs::nn
