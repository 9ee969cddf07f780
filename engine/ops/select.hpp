// Selection by a boolean mask: where and masked_fill (the causal mask of attention).
#pragma once

#include "engine/var.hpp"

namespace gs {

// out = cond ? a : b, elementwise; cond, a and b broadcast together.
Var where(const Mask& cond, const Var& a, const Var& b, Site site = Site::current());

// out = mask ? value : x; mask broadcasts to x's shape, and out keeps x's shape.
Var masked_fill(const Var& x, const Mask& mask, double value, Site site = Site::current());

}  // namespace gs
