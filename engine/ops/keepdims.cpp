#include "engine/ops/keepdims.hpp"

#include <xtensor/xmath.hpp>
#include <xtensor/xreducer.hpp>
#include <xtensor/xsort.hpp>

namespace gs {

Shape kept_shape(const Shape& from, const std::vector<std::size_t>& axes) {
  Shape keep = from;
  for (std::size_t a : axes) keep[a] = 1;
  return keep;
}

Array sum_keepdims(const Array& x, const std::vector<std::size_t>& axes) {
  // An empty x sums to zeros. (xtensor's reducer would offset an empty array's null data pointer: UB.)
  if (x.size() == 0) return xt::zeros<double>(kept_shape(shape_of(x), axes));
  Array r = xt::sum(x, axes);
  r.reshape(kept_shape(shape_of(x), axes));
  return r;
}

Array max_keepdims(const Array& x, const std::vector<std::size_t>& axes) {
  Array r = xt::amax(x, axes);
  r.reshape(kept_shape(shape_of(x), axes));
  return r;
}

}  // namespace gs
