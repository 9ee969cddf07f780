// Axis arguments: negative axes count from the end (-1 is the last), as in NumPy.
#pragma once

#include <string_view>
#include <vector>

#include "engine/array.hpp"
#include "engine/error.hpp"

namespace gs {

// An axis in [-rank, rank) as an index in [0, rank), rank = shape.size(); anything else throws naming
// the op and the shape.
std::size_t normalize_axis(int axis, const Shape& shape, std::string_view op, const Site& site);

// Sorted, distinct axes; an empty list means every axis.
std::vector<std::size_t> normalize_axes(const std::vector<int>& axes, const Shape& shape, std::string_view op,
                                        const Site& site);

// Throws, naming the op, the axis and the shape, if any of `axes` has length 0: a max, mean or softmax
// over no elements is undefined (a sum over none is 0 and needs no check).
void require_nonempty_axes(const std::vector<std::size_t>& axes, const Shape& shape, std::string_view op,
                           const Site& site);

// A permutation of 0..rank-1, written with possibly negative axes.
std::vector<std::size_t> normalize_permutation(const std::vector<int>& axes, const Shape& shape,
                                               std::string_view op, const Site& site);

}  // namespace gs
