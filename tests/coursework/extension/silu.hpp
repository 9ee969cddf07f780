// An op added from outside gradscope: SiLU (Hendrycks & Gimpel 2016; "swish" in Ramachandran et al. 2017),
//   y = x * sigmoid(x),   sigmoid(x) = 1 / (1 + e^-x)
#pragma once

#include "engine/var.hpp"

namespace ext {

// Elementwise, any shape. One entry on the tape ("silu") whose backward is written below its forward.
gs::Var silu(const gs::Var& x, gs::Site site = gs::Site::current());

}  // namespace ext
