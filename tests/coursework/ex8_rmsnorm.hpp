// Exercise 8 (docs/coursework.md#ex8): RMSNorm (Zhang & Sennrich 2019) built from engine ops only.
//   x (..., d), weight (d,):
//   rms = sqrt(mean(x^2 over the last axis) + eps)     (..., 1)
//   y   = x / rms * weight                              (..., d)
// Module 2, the layers. Difficulty: 1/3. Time: about 30 min.
#pragma once

#include "engine/var.hpp"

namespace gs::coursework {

// Composed of engine ops (mean, mul, sqrt, div, ...), so that the tape differentiates it: no
// hand-written backward, and no call into nn/. A weight that is not (d,) throws gs::Error whose
// message names "rmsnorm" and both shapes.
Var rmsnorm(const Var& x, const Var& weight, double eps = 1e-5, Site site = Site::current());

}  // namespace gs::coursework
