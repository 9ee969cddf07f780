// The value types of gradscope: every tensor is an xt::xarray<Real>, row-major and contiguous.
// Real is double unless the build says otherwise (cmake -DGRADSCOPE_PRECISION=f32, preset release-f32):
// double so that central finite differences (steps of ~1e-6) can check every gradient; float for speed.
// Sums over many elements (norms, means, losses) are accumulated in double in either build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>

namespace gs {

#ifdef GRADSCOPE_FLOAT32
using Real = float;
#else
using Real = double;
#endif
inline constexpr bool float32_build = sizeof(Real) == 4;
inline constexpr const char* precision_name = float32_build ? "f32" : "f64";  // as config.json records it

using Array = xt::xarray<Real>;             // a value or a gradient
using IndexArray = xt::xarray<std::int64_t>;  // integer ids: token ids, targets
using Mask = xt::xarray<bool>;                // true where masked_fill / where picks
using Shape = std::vector<std::size_t>;

// An array of shape (0,), with no elements. Making one allocates nothing, unlike Array{}, which is a
// 0-d array holding one 0.0 on the heap.
inline Array empty_array() { return Array::from_shape({0}); }

// The shape of an array as a Shape (xtensor's own shape type is an svector).
template <class E>
Shape shape_of(const E& e) {
  return Shape(e.shape().begin(), e.shape().end());
}

// "(2, 3)", "(4,)", "()" -- how every message and listing prints a shape.
std::string shape_str(const Shape& shape);

// The values as nested braces, row by row: "{{1, 2},\n {3, 4}}" (6 significant digits). Arrays of more
// than max_elements elements print the shape and the first max_elements values only.
// (This keeps xtensor's heavy <xtensor/xio.hpp> out of the engine.)
std::string to_string(const Array& x, std::size_t max_elements = 1000);

}  // namespace gs
