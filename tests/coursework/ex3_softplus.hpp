// Exercise 3 (docs/coursework.md#ex3): a new op, with its backward.
//   softplus(x) = log(1 + e^x)                  a smooth relu: ~0 for x << 0, ~x for x >> 0
//               = max(x, 0) + log(1 + e^-|x|)   the same, and no e^x ever overflows
//   d softplus / dx = e^x / (1 + e^x) = sigmoid(x)
// Module 1, the engine. Difficulty: 1/3. Time: about 30 min.
#pragma once

#include "engine/var.hpp"

namespace gs::coursework {

// Elementwise, any shape: ONE tape entry, op name "softplus", whose input is x.
Var softplus(const Var& x, Site site = Site::current());

}  // namespace gs::coursework
