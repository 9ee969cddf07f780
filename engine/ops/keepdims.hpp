// Plain-array reductions that keep the reduced axes as size 1, evaluated at once into a new array.
// xtensor 0.24's own keep_dims reducers are unreliable: lazily they broadcast wrongly inside larger
// expressions, and immediately with a std::vector of axes they build a wrongly typed result. These
// reduce lazily without keep_dims into an array, then reshape, which is correct and no slower.
#pragma once

#include <vector>

#include "engine/array.hpp"

namespace gs {

Array sum_keepdims(const Array& x, const std::vector<std::size_t>& axes);
// The max over `axes`, NaN wherever the reduced elements hold a NaN (xt::amax lets a NaN through or
// not depending on where it sits). Every reduced axis must be non-empty (require_nonempty_axes);
// an empty x whose reduced axes are non-empty gives an empty result.
Array max_keepdims(const Array& x, const std::vector<std::size_t>& axes);

// The shape of x after reducing `axes` with keepdims: those axes become 1.
Shape kept_shape(const Shape& from, const std::vector<std::size_t>& axes);

}  // namespace gs
