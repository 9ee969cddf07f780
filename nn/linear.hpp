// Linear: y = x @ W + b, the affine map applied to the last axis of x.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "nn/init.hpp"
#include "nn/module.hpp"

namespace gs::nn {

// The fused op's arithmetic on plain arrays, forward beside backward. Every leading position of x is
// a row: X (rows, in), W (in, out), G = dL/dY (rows, out).
//   forward:   Y = X W + b                 (..., in), (in, out), (out,) -> (..., out): rows start as b, one gemm adds X W
//   backward:  dX = G W^T (..., in),  dW = X^T G (in, out),  db = column sums of G (out,)
//              (one gemm each); an entry of `needs` that is false gives an empty array instead
Array linear_forward(const Array& x, const Array& weight, const Array& bias);
Grads linear_backward(const Array& grad, const Array& x, const Array& weight, const std::vector<bool>& needs);

// The math on plain Vars: x (..., in), weight (in, out), bias (out,) -> (..., out).
//   linear_composite  matmul(x, weight) + bias: two tape entries (matmul with a 2-D right operand is one
//                     gemm over every leading position of x);
//   linear_fused      one tape entry "linear_fused" (linear_forward / linear_backward), with no
//                     intermediate (..., out) product kept on the tape.
// tests/test_fused_kernels.cpp checks that both agree.
Var linear_composite(const Var& x, const Var& weight, const Var& bias, Site site = Site::current());
Var linear_fused(const Var& x, const Var& weight, const Var& bias, Site site = Site::current());

class Linear : public Module {
 public:
  // weight [in, out] from init.linear_weight (Xavier-uniform or N(0, 0.02)), bias [out] zeros.
  Linear(std::size_t in, std::size_t out, Initializer& init);

  Var forward(const Var& x, Site site = Site::current()) const;  // (..., in) -> (..., out), linear_fused

  std::size_t in_features, out_features;
  Parameter weight;  // [in, out]
  Parameter bias;    // [out]
};

}  // namespace gs::nn
