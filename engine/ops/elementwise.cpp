// Elementwise ops: each forward sits directly above its backward, with the derivative in a comment.
// g.grad is dL/dy for the op's output y; each backward returns dL/dx = dL/dy * dy/dx per input.
#include "engine/ops/elementwise.hpp"

#include <cmath>
#include <numbers>

#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>

#include "engine/broadcast.hpp"
#include "engine/kernels/vector_math.hpp"
#include "engine/tape.hpp"

namespace gs {
namespace {

// Throws a clear error (op, both shapes, call site) for operands that do not broadcast, before
// xtensor would throw its own. Equal shapes, the common case, need no Shape built.
void check_broadcast(const Var& a, const Var& b, const char* op, const Site& site) {
  if (a.value(site).shape() != b.value(site).shape()) broadcast_shapes(a.shape(site), b.shape(site), op, site);
}

}  // namespace

Var scalar_like(const Var& x, double c, Site site) {
  Array value = c;  // a 0-d array: broadcasts against anything
  return x.tape(site).constant(std::move(value), site);
}

// ---- binary: the output has the broadcast shape; the tape reduces each gradient to its input ----

Var add(const Var& a, const Var& b, Site site) {
  check_broadcast(a, b, "add", site);
  // z = a + b:  dz/da = 1,  dz/db = 1
  return a.tape(site).record("add", {a, b}, a.value() + b.value(),
                             [](const BackwardArgs& g) -> Grads { return {g.grad, g.grad}; }, site);
}

Var sub(const Var& a, const Var& b, Site site) {
  check_broadcast(a, b, "sub", site);
  // z = a - b:  dz/da = 1,  dz/db = -1
  return a.tape(site).record("sub", {a, b}, a.value() - b.value(),
                             [](const BackwardArgs& g) -> Grads { return {g.grad, -g.grad}; }, site);
}

Var mul(const Var& a, const Var& b, Site site) {
  check_broadcast(a, b, "mul", site);
  // z = a * b:  dz/da = b,  dz/db = a
  return a.tape(site).record("mul", {a, b}, a.value() * b.value(), [](const BackwardArgs& g) -> Grads {
    return {g.needs(0) ? Array(g.grad * g.in(1)) : Array{}, g.needs(1) ? Array(g.grad * g.in(0)) : Array{}};
  }, site);
}

Var div(const Var& a, const Var& b, Site site) {
  check_broadcast(a, b, "div", site);
  // z = a / b:  dz/da = 1/b,  dz/db = -a/b^2 = -z/b
  return a.tape(site).record("div", {a, b}, a.value() / b.value(), [](const BackwardArgs& g) -> Grads {
    return {g.needs(0) ? Array(g.grad / g.in(1)) : Array{},
            g.needs(1) ? Array(-g.grad * g.out / g.in(1)) : Array{}};
  }, site);
}

// ---- unary ----

Var neg(const Var& x, Site site) {
  // y = -x:  dy/dx = -1
  return x.tape(site).record("neg", {x}, -x.value(site),
                             [](const BackwardArgs& g) -> Grads { return {-g.grad}; }, site);
}

Var pow(const Var& x, double p, Site site) {
  // y = x^p:  dy/dx = p x^(p-1), and for p = 0 (y = 1, a constant) dy/dx = 0 everywhere, also at
  // x = 0 where p x^(p-1) would be 0 * inf (PyTorch's rule). Values follow C's std::pow (IEEE 754):
  // 0^0 = 1, 0^p = inf for p < 0, a negative x to a non-integer p is NaN, and x^0 = 1 even for a NaN x.
  // Both loops call std::pow element by element: xt::pow evaluated pairs of elements with xsimd and
  // the odd one with std::pow, and the two disagree at 0 (0^0 gave 0 in a pair and 1 alone).
  const Array& v = x.value(site);
  Array y = Array::from_shape(shape_of(v));
  for (std::size_t i = 0; i < v.size(); ++i) y.data()[i] = std::pow(v.data()[i], p);
  return x.tape(site).record("pow", {x}, std::move(y), [p](const BackwardArgs& g) -> Grads {
    const Array& in = g.in(0);
    Array dx = Array::from_shape(shape_of(in));
    for (std::size_t i = 0; i < in.size(); ++i)
      dx.data()[i] = p == 0.0 ? g.grad.data()[i] * 0.0 : g.grad.data()[i] * p * std::pow(in.data()[i], p - 1.0);
    return {std::move(dx)};
  }, site);
}

Var exp(const Var& x, Site site) {
  // y = e^x:  dy/dx = e^x = y
  return x.tape(site).record("exp", {x}, xt::exp(x.value(site)),
                             [](const BackwardArgs& g) -> Grads { return {g.grad * g.out}; }, site);
}

Var log(const Var& x, Site site) {
  // y = ln x:  dy/dx = 1/x
  return x.tape(site).record("log", {x}, xt::log(x.value(site)),
                             [](const BackwardArgs& g) -> Grads { return {g.grad / g.in(0)}; }, site);
}

Var sqrt(const Var& x, Site site) {
  // y = sqrt(x):  dy/dx = 1 / (2 sqrt(x)) = 0.5 / y
  return x.tape(site).record("sqrt", {x}, xt::sqrt(x.value(site)),
                             [](const BackwardArgs& g) -> Grads { return {0.5 * g.grad / g.out}; }, site);
}

Var tanh(const Var& x, Site site) {
  // y = tanh x:  dy/dx = 1 - y^2
  return x.tape(site).record("tanh", {x}, xt::tanh(x.value(site)), [](const BackwardArgs& g) -> Grads {
    return {g.grad * (1.0 - g.out * g.out)};
  }, site);
}

Var sigmoid(const Var& x, Site site) {
  // y = 1 / (1 + e^-x):  dy/dx = y (1 - y)
  return x.tape(site).record("sigmoid", {x}, 1.0 / (1.0 + xt::exp(-x.value(site))),
                             [](const BackwardArgs& g) -> Grads { return {g.grad * g.out * (1.0 - g.out)}; },
                             site);
}

Var relu(const Var& x, Site site) {
  // y = max(x, 0):  dy/dx = 1 where x > 0, else 0 (the subgradient 0 at x = 0). A NaN x gives y = NaN
  // and dy/dx = NaN: xt::maximum(x, 0) returned 0 for NaN, so a NaN vanished here unseen.
  const Array& v = x.value(site);
  Array y = Array::from_shape(shape_of(v));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double a = v.data()[i];
    y.data()[i] = a > 0.0 ? a : std::isnan(a) ? a : 0.0;
  }
  return x.tape(site).record("relu", {x}, std::move(y), [](const BackwardArgs& g) -> Grads {
    const Array& in = g.in(0);
    Array dx = Array::from_shape(shape_of(in));
    for (std::size_t i = 0; i < in.size(); ++i) {
      const double a = in.data()[i];
      dx.data()[i] = g.grad.data()[i] * (a > 0.0 ? 1.0 : std::isnan(a) ? a : 0.0);
    }
    return {std::move(dx)};
  }, site);
}

Var gelu(const Var& x, Site site) {
  // y = x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2 the normal CDF (the exact, erf form)
  // dy/dx = Phi(x) + x phi(x),  phi(x) = e^(-x^2/2) / sqrt(2 pi) the normal density
  // Plain formulation: v * 0.5 * (1.0 + xt::erf(v / sqrt 2)). kernels::gelu_forward computes the same
  // bits in one loop that the compiler vectorises for the host CPU (engine/kernels/vector_math.hpp).
  const Array& v = x.value(site);
  Array y = Array::from_shape(shape_of(v));
  kernels::gelu_forward(v.data(), y.data(), v.size());
  return x.tape(site).record("gelu", {x}, std::move(y), [](const BackwardArgs& g) -> Grads {
    // Plain formulation: g.grad * (Phi(x) + x phi(x)) with Phi from erf and phi from exp. The kernel
    // reads Phi(x) off the output instead (tests/test_fused_kernels.cpp checks the two agree).
    Array dx = Array::from_shape(shape_of(g.grad));
    kernels::gelu_backward(g.in(0).data(), g.out.data(), g.grad.data(), dx.data(), dx.size());
    return {std::move(dx)};
  }, site);
}

}  // namespace gs
