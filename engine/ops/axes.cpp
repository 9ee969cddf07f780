#include "engine/ops/axes.hpp"

#include <algorithm>

namespace gs {

std::size_t normalize_axis(int axis, const Shape& shape, std::string_view op, const Site& site) {
  const int r = static_cast<int>(shape.size());
  if (axis < -r || axis >= r)
    fail(op, site, "axis " + std::to_string(axis) + " is out of range for an array of shape " + shape_str(shape) +
                       " (" + std::to_string(r) + " dimensions)");
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

std::vector<std::size_t> normalize_axes(const std::vector<int>& axes, const Shape& shape, std::string_view op,
                                        const Site& site) {
  std::vector<std::size_t> out;
  if (axes.empty()) {
    for (std::size_t i = 0; i < shape.size(); ++i) out.push_back(i);
    return out;
  }
  for (int a : axes) out.push_back(normalize_axis(a, shape, op, site));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    fail(op, site, "an axis is repeated (array of shape " + shape_str(shape) + ")");
  return out;
}

void require_nonempty_axes(const std::vector<std::size_t>& axes, const Shape& shape, std::string_view op,
                           const Site& site) {
  for (std::size_t a : axes)
    if (shape[a] == 0)
      fail(op, site, "axis " + std::to_string(a) + " of an array of shape " + shape_str(shape) +
                         " has length 0: there is nothing to reduce over");
}

std::vector<std::size_t> normalize_permutation(const std::vector<int>& axes, const Shape& shape,
                                               std::string_view op, const Site& site) {
  const std::size_t rank = shape.size();
  if (axes.size() != rank)
    fail(op, site, "needs " + std::to_string(rank) + " axes for an array of shape " + shape_str(shape) + ", got " +
                       std::to_string(axes.size()));
  std::vector<std::size_t> perm;
  for (int a : axes) perm.push_back(normalize_axis(a, shape, op, site));
  std::vector<std::size_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    fail(op, site, "an axis is repeated (array of shape " + shape_str(shape) + ")");
  return perm;
}

}  // namespace gs
