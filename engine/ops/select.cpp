#include "engine/ops/select.hpp"

#include <xtensor/xoperation.hpp>

#include "engine/broadcast.hpp"
#include "engine/tape.hpp"

namespace gs {

Var where(const Mask& cond, const Var& a, const Var& b, Site site) {
  broadcast_shapes(shape_of(cond), broadcast_shapes(a.shape(site), b.shape(site), "where", site), "where", site);
  // y = cond ? a : b:  dy/da = cond,  dy/db = not cond
  return a.tape(site).record("where", {a, b}, xt::where(cond, a.value(), b.value()),
                             [cond](const BackwardArgs& g) -> Grads {
    return {g.needs(0) ? Array(xt::where(cond, g.grad, 0.0)) : Array{},
            g.needs(1) ? Array(xt::where(cond, 0.0, g.grad)) : Array{}};
  }, site);
}

Var masked_fill(const Var& x, const Mask& mask, double value, Site site) {
  const Shape xs = x.shape(site);
  if (broadcast_shapes(shape_of(mask), xs, "masked_fill", site) != xs)
    fail("masked_fill", site, "the mask " + shape_str(shape_of(mask)) + " would enlarge x " + shape_str(xs) +
                                  "; it must broadcast to x's shape");
  // y = mask ? value : x:  dy/dx = 0 where masked, 1 elsewhere
  return x.tape(site).record("masked_fill", {x}, xt::where(mask, value, x.value()),
                             [mask](const BackwardArgs& g) -> Grads { return {Array(xt::where(mask, 0.0, g.grad))}; },
                             site);
}

}  // namespace gs
