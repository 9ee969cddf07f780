// RMSNorm (Zhang & Sennrich 2019) over the last axis: LayerNorm without the mean, weight only.
//   rmsnorm_composite  built from engine ops, every intermediate on the tape;
//   rmsnorm_fused      one tape entry "rmsnorm_fused", its backward rmsnorm_backward derived by hand in
//                      docs/layernorm.md.
// The fused op's arithmetic is the pair below, on plain arrays, forward beside backward.
#pragma once

#include <cstddef>

#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "nn/norm.hpp"

namespace gs::nn {

// x (..., d), weight (d,) -> y (..., d), per row:
//   rstd = 1 / sqrt((1/d) sum_i x_i^2 + eps),  x_hat_i = x_i * rstd,  y_i = x_hat_i * w_i
// rstd (rows,) goes to `rstd`, for the backward pass.
Array rmsnorm_forward(const Array& x, const Array& weight, double eps, Array& rstd);
// grad = dL/dy (..., d), x (..., d), weight (d,) -> {dx (..., d), dw (d,)}, per row with g_hat = g * w:
//   dx = rstd * (g_hat - x_hat * mean(g_hat * x_hat)),  dw = sum over rows of g * x_hat.
// `mode` changes dx only (NormGrad: undo_gain drops the factor rstd, detach_stats the mean term).
Grads rmsnorm_backward(const Array& grad, const Array& x, const Array& weight, const Array& rstd, NormGrad mode = {});

// RMSNorm, x (..., d), weight (d,):  rms = sqrt(mean(x^2) + eps), x_hat = x / rms, y = x_hat * weight
Var rmsnorm_composite(const Var& x, const Var& weight, double eps = 1e-5, NormGrad mode = {},
                      Site site = Site::current());
Var rmsnorm_fused(const Var& x, const Var& weight, double eps = 1e-5, NormGrad mode = {},
                  Site site = Site::current());

class RMSNorm : public NormLayer {
 public:
  explicit RMSNorm(std::size_t d, bool fused = true);  // weight ones
  Var forward(const Var& x, Site site = Site::current()) const override;  // (..., d) -> (..., d)

  double eps = 1e-5;
  Parameter weight;  // [d]
};

}  // namespace gs::nn
