#include "engine/ops/reduce.hpp"

#include <xtensor/xbroadcast.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xreducer.hpp>

#include "engine/ops/axes.hpp"
#include "engine/ops/keepdims.hpp"
#include "engine/tape.hpp"

namespace gs {
namespace {

// The output shape: kept_shape, or without the reduced axes.
Shape reduced_shape(const Shape& from, const std::vector<std::size_t>& axes, bool keepdims) {
  if (keepdims) return kept_shape(from, axes);
  Shape out;
  for (std::size_t d = 0; d < from.size(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) out.push_back(from[d]);
  return out;
}

// A reduced gradient laid out with keepdims and broadcast back over the input's shape.
Array spread(const Array& grad, const Shape& keep, const Shape& from) {
  Array g = grad;
  g.reshape(keep);
  return xt::broadcast(g, from);
}

}  // namespace

Var sum(const Var& x, const std::vector<int>& axes, bool keepdims, Site site) {
  const Shape from = x.shape(site);
  const auto ax = normalize_axes(axes, from, "sum", site);
  Array value = sum_keepdims(x.value(), ax);
  value.reshape(reduced_shape(from, ax, keepdims));
  // y = sum_i x_i:  dy/dx_i = 1, so every x_i gets the gradient of the sum it went into
  const Shape keep = kept_shape(from, ax);
  return x.tape(site).record("sum", {x}, std::move(value), [keep, from](const BackwardArgs& g) -> Grads {
    return {spread(g.grad, keep, from)};
  }, site);
}

Var mean(const Var& x, const std::vector<int>& axes, bool keepdims, Site site) {
  const Shape from = x.shape(site);
  const auto ax = normalize_axes(axes, from, "mean", site);
  require_nonempty_axes(ax, from, "mean", site);
  double count = 1.0;
  for (std::size_t a : ax) count *= static_cast<double>(from[a]);
  Array value = sum_keepdims(x.value(), ax) / count;
  value.reshape(reduced_shape(from, ax, keepdims));
  // y = (1/n) sum_i x_i:  dy/dx_i = 1/n
  const Shape keep = kept_shape(from, ax);
  return x.tape(site).record("mean", {x}, std::move(value), [keep, from, count](const BackwardArgs& g) -> Grads {
    return {spread(g.grad, keep, from) / count};
  }, site);
}

Var max(const Var& x, const std::vector<int>& axes, bool keepdims, Site site) {
  const Shape from = x.shape(site);
  const auto ax = normalize_axes(axes, from, "max", site);
  require_nonempty_axes(ax, from, "max", site);
  Array value = max_keepdims(x.value(), ax);
  value.reshape(reduced_shape(from, ax, keepdims));
  // y = max_i x_i:  dy/dx_i = 1 at the arg max, 0 elsewhere; k tied maxima get 1/k each.
  // A NaN among the x_i makes y NaN and, since no x_i then equals y (ties = 0), every x_i's gradient 0/0 = NaN.
  const Shape keep = kept_shape(from, ax);
  return x.tape(site).record("max", {x}, std::move(value), [keep, from, ax](const BackwardArgs& g) -> Grads {
    Array top = spread(g.out, keep, from);
    Array is_max = xt::cast<Real>(xt::equal(g.in(0), top));
    Array ties = sum_keepdims(is_max, ax);
    return {is_max * spread(g.grad, keep, from) / ties};
  }, site);
}

Var softmax(const Var& x, int axis, Site site) {
  const Shape from = x.shape(site);
  const std::size_t a = normalize_axis(axis, from, "softmax", site);
  require_nonempty_axes({a}, from, "softmax", site);
  const Array& v = x.value();
  Array m = max_keepdims(v, {a});
  Array e = xt::exp(v - m);
  Array s = sum_keepdims(e, {a});
  // y = softmax(x):  dL/dx_i = y_i (dL/dy_i - sum_j dL/dy_j y_j)
  return x.tape(site).record("softmax", {x}, e / s, [a](const BackwardArgs& g) -> Grads {
    Array gy = g.grad * g.out;
    Array dot = sum_keepdims(gy, {a});
    return {gy - g.out * dot};
  }, site);
}

Var log_softmax(const Var& x, int axis, Site site) {
  const Shape from = x.shape(site);
  const std::size_t a = normalize_axis(axis, from, "log_softmax", site);
  require_nonempty_axes({a}, from, "log_softmax", site);
  const Array& v = x.value();
  Array m = max_keepdims(v, {a});
  Array shifted = v - m;
  Array lse = xt::log(sum_keepdims(xt::exp(shifted), {a}));
  // y = x - logsumexp(x):  dL/dx_i = dL/dy_i - softmax(x)_i sum_j dL/dy_j, and softmax = e^y
  return x.tape(site).record("log_softmax", {x}, shifted - lse, [a](const BackwardArgs& g) -> Grads {
    Array total = sum_keepdims(g.grad, {a});
    return {g.grad - xt::exp(g.out) * total};
  }, site);
}

double cross_entropy_forward(const Array& logits, const IndexArray& targets) {
  const std::size_t classes = logits.shape().back(), rows = targets.size();
  // Row by row: loss_r = logsumexp(z_r) - z_r[t_r], the loss is their mean.
  const Real* z = logits.data();
  double total = 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    const Real* row = z + r * classes;
    const double m = *std::max_element(row, row + classes);
    double s = 0.0;
    for (std::size_t c = 0; c < classes; ++c) s += std::exp(row[c] - m);
    total += m + std::log(s) - row[targets.data()[r]];
  }
  return total / static_cast<double>(rows);
}

Array cross_entropy_backward(double grad, const Array& logits, const IndexArray& targets) {
  const std::size_t classes = logits.shape().back(), rows = targets.size();
  // dL/dz_r = (softmax(z_r) - onehot(t_r)) / rows, times the incoming scalar gradient
  Array dz = Array::from_shape(shape_of(logits));  // (..., C)
  const double scale = grad / static_cast<double>(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const Real* row = logits.data() + r * classes;
    Real* out = dz.data() + r * classes;
    const double m = *std::max_element(row, row + classes);
    double s = 0.0;
    for (std::size_t c = 0; c < classes; ++c) s += (out[c] = std::exp(row[c] - m));
    for (std::size_t c = 0; c < classes; ++c) out[c] = out[c] / s * scale;
    out[targets.data()[r]] -= scale;
  }
  return dz;
}

Var cross_entropy(const Var& logits, const IndexArray& targets, Site site) {
  const Shape ls = logits.shape(site);
  const Shape ts = shape_of(targets);
  if (ls.empty() || Shape(ls.begin(), ls.end() - 1) != ts)
    fail("cross_entropy", site, "logits " + shape_str(ls) + " need targets of shape logits.shape[:-1], got " +
                                    shape_str(ts));
  const std::size_t classes = ls.back();
  for (std::int64_t t : targets)
    if (t < 0 || static_cast<std::size_t>(t) >= classes)
      fail("cross_entropy", site, "target " + std::to_string(t) + " is not a class in [0, " +
                                      std::to_string(classes) + ") of logits " + shape_str(ls));
  if (targets.size() == 0) fail("cross_entropy", site, "no positions: targets " + shape_str(ts) + " are empty");
  Array value = cross_entropy_forward(logits.value(), targets);  // ()
  return logits.tape(site).record("cross_entropy", {logits}, std::move(value),
                                  [targets](const BackwardArgs& g) -> Grads {
    return {cross_entropy_backward(g.grad(), g.in(0), targets)};
  }, site);
}

}  // namespace gs
