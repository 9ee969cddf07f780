// NumPy broadcasting. Forward: the shape two operands broadcast to. Backward: the one step that sums
// a gradient back to an input's shape; the tape calls it for every op, so no op repeats it.
#pragma once

#include <span>
#include <string_view>

#include "engine/array.hpp"
#include "engine/error.hpp"

namespace gs {

// Shapes are aligned on the right; each pair of dimensions must be equal or contain a 1.
// (2, 3) with (3,) -> (2, 3);  (4, 1, 5) with (3, 1) -> (4, 3, 5);  (2, 3) with (4,) -> error.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op, const Site& site);

// The adjoint of broadcasting: if x of shape `shape` was broadcast to grad's shape in the forward
// pass, then dL/dx is grad summed over the leading dimensions that broadcasting added and over every
// dimension where `shape` has a 1. Throws if grad's shape is not a broadcast of `shape`.
// When grad already has `shape` (nothing was broadcast, the common case) it is returned as it is.
// `shape` is a span so that the tape can pass an input's own xtensor shape without building a Shape.
Array sum_to_shape(Array grad, std::span<const std::size_t> shape, std::string_view op, const Site& site);

}  // namespace gs
