// LayerNorm and RMSNorm over the last axis, each in two forms that compute the same function:
//   composite: built from engine ops (mean, sub, mul, sqrt, div, ...), so every intermediate is an
//              entry of the tape with its own gradient, for students to look at;
//   fused:     one tape entry ("layernorm_fused" / "rmsnorm_fused") whose backward is derived by hand
//              in docs/layernorm.md; faster and lighter.
// The member `fused` chooses at run time (default: fused). Both use eps = 1e-5 and the biased
// variance (divide by d, not d - 1).
#pragma once

#include <cstddef>

#include "engine/var.hpp"
#include "nn/module.hpp"

namespace gs::nn {

// LayerNorm, x (..., d), weight (d,), bias (d,):
//   mu = mean(x), var = mean((x - mu)^2), sigma = sqrt(var + eps), x_hat = (x - mu) / sigma,
//   y = x_hat * weight + bias
Var layernorm_composite(const Var& x, const Var& weight, const Var& bias, double eps = 1e-5,
                        Site site = Site::current());
Var layernorm_fused(const Var& x, const Var& weight, const Var& bias, double eps = 1e-5,
                    Site site = Site::current());

// RMSNorm, x (..., d), weight (d,):
//   rms = sqrt(mean(x^2) + eps), x_hat = x / rms, y = x_hat * weight
Var rmsnorm_composite(const Var& x, const Var& weight, double eps = 1e-5, Site site = Site::current());
Var rmsnorm_fused(const Var& x, const Var& weight, double eps = 1e-5, Site site = Site::current());

class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::size_t d, bool fused = true);  // weight ones, bias zeros
  Var forward(const Var& x, Site site = Site::current()) const;  // (..., d) -> (..., d)

  std::size_t dim;
  bool fused;
  double eps = 1e-5;
  Parameter weight;  // [d]
  Parameter bias;    // [d]
};

class RMSNorm : public Module {
 public:
  explicit RMSNorm(std::size_t d, bool fused = true);  // weight ones
  Var forward(const Var& x, Site site = Site::current()) const;  // (..., d) -> (..., d)

  std::size_t dim;
  bool fused;
  double eps = 1e-5;
  Parameter weight;  // [d]
};

}  // namespace gs::nn
