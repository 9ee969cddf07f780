#include "engine/ops/select.hpp"

#include <xtensor/xbroadcast.hpp>

#include "engine/broadcast.hpp"
#include "engine/tape.hpp"

namespace gs {
namespace {

// out = cond ? a : b elementwise, with a and b first laid out in cond's shape (the output's). A plain
// loop on purpose: xtensor 0.24's vectorized (xsimd) xt::where picks the wrong elements whenever an
// operand broadcasts, e.g. a (4,) mask or a (1, 4) value against (3, 4).
Array select(const Mask& cond, const Array& a, const Array& b) {
  const Shape shape = shape_of(cond);
  const Array x = xt::broadcast(a, shape), y = xt::broadcast(b, shape);
  Array out = Array::from_shape(shape);
  for (std::size_t k = 0; k < out.size(); ++k) out.data()[k] = cond.data()[k] ? x.data()[k] : y.data()[k];
  return out;
}

}  // namespace

Var where(const Mask& cond, const Var& a, const Var& b, Site site) {
  const Shape ab = broadcast_shapes(a.shape(site), b.shape(site), "where", site);
  const Mask full = xt::broadcast(cond, broadcast_shapes(shape_of(cond), ab, "where", site));
  // y = cond ? a : b:  dy/da = cond,  dy/db = not cond
  return a.tape(site).record("where", {a, b}, select(full, a.value(), b.value()),
                             [full](const BackwardArgs& g) -> Grads {
    const Array zero = 0.0;
    return {g.needs(0) ? select(full, g.grad, zero) : Array{}, g.needs(1) ? select(full, zero, g.grad) : Array{}};
  }, site);
}

Var masked_fill(const Var& x, const Mask& mask, double value, Site site) {
  const Shape xs = x.shape(site);
  if (broadcast_shapes(shape_of(mask), xs, "masked_fill", site) != xs)
    fail("masked_fill", site, "the mask " + shape_str(shape_of(mask)) + " would enlarge x " + shape_str(xs) +
                                  "; it must broadcast to x's shape");
  const Mask full = xt::broadcast(mask, xs);
  // y = mask ? value : x:  dy/dx = 0 where masked, 1 elsewhere
  return x.tape(site).record("masked_fill", {x}, select(full, Array(value), x.value()),
                             [full](const BackwardArgs& g) -> Grads { return {select(full, Array(0.0), g.grad)}; },
                             site);
}

}  // namespace gs
