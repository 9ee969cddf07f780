#include "engine/ops/keepdims.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

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
  if (x.size() == 0) return xt::zeros<Real>(kept_shape(shape_of(x), axes));
  Array r = xt::sum(x, axes);
  r.reshape(kept_shape(shape_of(x), axes));
  return r;
}

Array max_keepdims(const Array& x, const std::vector<std::size_t>& axes) {
  if (x.size() == 0) return Array::from_shape(kept_shape(shape_of(x), axes));  // no data for xtensor to offset
  Array r = xt::amax(x, axes);
  r.reshape(kept_shape(shape_of(x), axes));
  // Finite (and infinite) maxima are exact whichever element xt::amax compared first; only NaN needs
  // a second look, and only when there is one.
  if (std::any_of(x.begin(), x.end(), [](double v) { return std::isnan(v); })) {
    const Array nans = sum_keepdims(xt::cast<Real>(xt::isnan(x)), axes);
    for (std::size_t i = 0; i < r.size(); ++i)
      if (nans.data()[i] > 0.0) r.data()[i] = std::numeric_limits<double>::quiet_NaN();
  }
  // xt::amax starts from the lowest finite double, so a slice of -inf only gave -DBL_MAX: make it -inf.
  constexpr double minus_inf = -std::numeric_limits<double>::infinity();
  if (std::any_of(x.begin(), x.end(), [](double v) { return v == minus_inf; })) {
    const Array count = sum_keepdims(xt::cast<Real>(xt::equal(x, minus_inf)), axes);
    const double slice = static_cast<double>(x.size() / r.size());
    for (std::size_t i = 0; i < r.size(); ++i)
      if (count.data()[i] == slice) r.data()[i] = minus_inf;
  }
  return r;
}

}  // namespace gs
