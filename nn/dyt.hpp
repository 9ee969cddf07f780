// Dynamic Tanh (Zhu, Chen, He, LeCun & Liu 2025, "Transformers without Normalization"): an elementwise
// stand-in for a norm, no statistics over the row at all:
//   y = weight * tanh(alpha * x) + bias       x (..., d), weight (d,), bias (d,), alpha (1,) a learnable scalar
// weight starts at ones, bias at zeros, alpha at ModelConfig::dyt_alpha (the paper's alpha_0, 0.5).
//   dyt_composite  built from engine ops (mul, tanh, mul, add), every intermediate on the tape;
//   dyt_fused      one tape entry "dyt_fused", its backward dyt_backward written out below.
#pragma once

#include <cstddef>

#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "nn/norm.hpp"

namespace gs::nn {

// x (..., d), weight (d,), bias (d,), alpha (1,) -> y (..., d):  t = tanh(alpha x),  y = t * w + b
Array dyt_forward(const Array& x, const Array& weight, const Array& bias, const Array& alpha);
// grad = dL/dy (..., d) -> {dx (..., d), dw (d,), db (d,), dalpha (1,)}, with t = tanh(alpha x) and
// u = g * w * (1 - t^2) (the gradient reaching alpha x):
//   dx = alpha * u,  dw = sum over rows of g * t,  db = sum over rows of g,  dalpha = sum of u * x
// t is recomputed from x and alpha rather than kept from the forward pass.
Grads dyt_backward(const Array& grad, const Array& x, const Array& weight, const Array& alpha);

Var dyt_composite(const Var& x, const Var& weight, const Var& bias, const Var& alpha, Site site = Site::current());
Var dyt_fused(const Var& x, const Var& weight, const Var& bias, const Var& alpha, Site site = Site::current());

class DyT : public NormLayer {
 public:
  DyT(std::size_t d, double alpha0, bool fused = true);  // weight ones, bias zeros, alpha = alpha0
  // (..., d) -> (..., d). DyT has no statistics, so NormGrad does not apply: forward throws if
  // `backward_mode` asks for a change (the interventions refuse dyt before that).
  Var forward(const Var& x, Site site = Site::current()) const override;

  Parameter weight;  // [d]
  Parameter bias;    // [d]
  Parameter alpha;   // [1]
};

}  // namespace gs::nn
