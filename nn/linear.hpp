// Linear: y = x @ W + b, the affine map applied to the last axis of x.
#pragma once

#include <cstddef>

#include "engine/var.hpp"
#include "nn/init.hpp"
#include "nn/module.hpp"

namespace gs::nn {

// The math on plain Vars: x (..., in), weight (in, out), bias (out,) -> (..., out).
//
// linear_composite is the plain formulation: matmul(x, weight) + bias, two tape entries (matmul with a
// 2-D right operand is one gemm over every leading position of x).
// linear is the fused op, one tape entry "linear": one gemm into rows that start as the bias, and in
// the backward dX = G W^T, dW = X^T G (one gemm each) and db = the column sums of G, with no
// intermediate (..., out) product kept on the tape. tests/test_fused_kernels.cpp checks that both agree.
Var linear_composite(const Var& x, const Var& weight, const Var& bias, Site site = Site::current());
Var linear(const Var& x, const Var& weight, const Var& bias, Site site = Site::current());

class Linear : public Module {
 public:
  // weight [in, out] from init.linear_weight (Xavier-uniform or N(0, 0.02)), bias [out] zeros.
  Linear(std::size_t in, std::size_t out, Initializer& init);

  Var forward(const Var& x, Site site = Site::current()) const;  // (..., in) -> (..., out)

  std::size_t in_features, out_features;
  Parameter weight;  // [in, out]
  Parameter bias;    // [out]
};

}  // namespace gs::nn
