// The position-wise feed-forward sublayer: fc1 (d -> d_ff), GELU (erf form), fc2 (d_ff -> d).
#pragma once

#include <cstddef>

#include "engine/var.hpp"
#include "nn/init.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"

namespace gs::nn {

class MLP : public Module {
 public:
  MLP(std::size_t d, std::size_t d_ff, Initializer& init);
  // y = fc2(gelu(fc1(x))):  (..., d) -> (..., d_ff) -> (..., d)
  Var forward(const Var& x, Site site = Site::current()) const;

  Linear fc1;  // "fc1": [d, d_ff]
  Linear fc2;  // "fc2": [d_ff, d]
};

}  // namespace gs::nn
