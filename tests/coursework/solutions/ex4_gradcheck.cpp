// Reference solution of exercise 4 (docs/coursework.md#ex4).
#include "../ex4_gradcheck.hpp"

#include <cmath>

#include "engine/engine.hpp"

namespace gs::coursework {

bool gradients_agree(const ScalarFunction& f, const Array& x) {
  // L(x) on a fresh tape of our own; with `grad`, also dL/dx from backward().
  auto loss = [&f](const Array& at, Array* grad) {
    Tape tape;
    TapeScope scope(tape);
    Var leaf = tape.leaf(at);
    Var L = f(leaf);
    if (grad) {
      L.backward();
      *grad = leaf.entry().has_grad ? leaf.grad() : Array(xt::zeros_like(at));  // x unused: gradient 0
    }
    return L.value()();
  };
  Array analytic;
  loss(x, &analytic);

  const double h = 1e-6;  // central differences: truncation ~h^2, rounding ~1e-16 |L| / h
  Array xp = x;
  for (std::size_t i = 0; i < x.size(); ++i) {
    xp.data()[i] = x.data()[i] + h;
    const double up = loss(xp, nullptr);
    xp.data()[i] = x.data()[i] - h;
    const double down = loss(xp, nullptr);
    xp.data()[i] = x.data()[i];
    const double numeric = (up - down) / (2.0 * h);
    // Absolute and relative together: a pure relative test fails where the gradient is ~0, a pure
    // absolute one where it is large.
    if (std::abs(analytic.data()[i] - numeric) > 1e-6 + 1e-5 * std::abs(numeric)) return false;
  }
  return true;
}

}  // namespace gs::coursework
