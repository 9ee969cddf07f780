// Linear: y = x @ W + b, the affine map applied to the last axis of x.
#pragma once

#include <cstddef>

#include "engine/var.hpp"
#include "nn/init.hpp"
#include "nn/module.hpp"

namespace gs::nn {

// The math on plain Vars: x (..., in), weight (in, out), bias (out,) -> (..., out). x is flattened to
// (rows, in) so that the product is one gemm, then laid back out as (..., out).
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
