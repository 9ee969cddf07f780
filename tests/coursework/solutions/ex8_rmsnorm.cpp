// Reference solution of exercise 8 (docs/coursework.md#ex8).
#include "../ex8_rmsnorm.hpp"

#include "engine/engine.hpp"

namespace gs::coursework {

Var rmsnorm(const Var& x, const Var& weight, double eps, Site site) {
  const Shape xs = x.shape(site), ws = weight.shape(site);
  if (xs.empty() || ws != Shape{xs.back()})
    fail("rmsnorm", site, "weight " + shape_str(ws) + " must be (d,) for x " + shape_str(xs));
  Var ms = mean(x * x, {-1}, true, site);  // (..., 1)  (1/d) sum_i x_i^2
  Var rms = sqrt(ms + eps, site);          // (..., 1)
  return x / rms * weight;                 // (..., d)  broadcasts (..., 1) and (d,)
}

}  // namespace gs::coursework
