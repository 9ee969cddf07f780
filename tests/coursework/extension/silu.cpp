#include "silu.hpp"

#include <xtensor/xmath.hpp>

#include "engine/tape.hpp"

namespace ext {

gs::Var silu(const gs::Var& x, gs::Site site) {
  const gs::Array& v = x.value(site);
  // y = x s,  s = sigmoid(x)
  gs::Array y = v / (1.0 + xt::exp(-v));
  // dy/dx = s + x s (1 - s) = s (1 + x (1 - s))
  return x.tape(site).record("silu", {x}, std::move(y), [](const gs::BackwardArgs& g) -> gs::Grads {
    const gs::Array& x = g.in(0);
    const gs::Array s = 1.0 / (1.0 + xt::exp(-x));
    return {g.grad * s * (1.0 + x * (1.0 - s))};
  }, site);
}

}  // namespace ext
