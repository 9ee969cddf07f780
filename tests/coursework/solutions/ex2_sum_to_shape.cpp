// Reference solution of exercise 2 (docs/coursework.md#ex2).
#include "../ex2_sum_to_shape.hpp"

#include <xtensor/xbuilder.hpp>

#include "engine/error.hpp"

namespace gs::coursework {

Array sum_to_shape(const Array& grad, const Shape& shape) {
  const Shape from = shape_of(grad);
  const std::size_t n = from.size();
  if (shape.size() > n) fail("sum_to_shape", Site::current(), "cannot sum " + shape_str(from) + " to " + shape_str(shape));
  const std::size_t lead = n - shape.size();  // axes that broadcasting added in front
  // to[a] = the size of axis a of the result, in grad's numbering: 1 on a leading or stretched axis.
  Shape to(n, 1);
  for (std::size_t a = lead; a < n; ++a) {
    to[a] = shape[a - lead];
    if (to[a] != from[a] && to[a] != 1)
      fail("sum_to_shape", Site::current(), "gradient " + shape_str(from) + " is not a broadcast of " + shape_str(shape));
  }
  Array out = xt::zeros<Real>(shape);
  // Walk grad's elements in row-major order with a multi-index; each goes to the element whose index
  // is the same with 0 on every summed axis.
  Shape index(n, 0);
  for (std::size_t flat = 0; flat < grad.size(); ++flat) {
    std::size_t target = 0;
    for (std::size_t a = lead; a < n; ++a) target = target * to[a] + (to[a] == 1 ? 0 : index[a]);
    out.data()[target] += grad.data()[flat];
    for (std::size_t a = n; a-- > 0;) {  // the next multi-index
      if (++index[a] < from[a]) break;
      index[a] = 0;
    }
  }
  return out;
}

}  // namespace gs::coursework
