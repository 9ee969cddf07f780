// LayerNorm, composite and fused. The fused pair layernorm_forward / layernorm_backward is derived in
// docs/layernorm.md with the same variable names as here.
#include "nn/layernorm.hpp"

#include <cmath>

#include "engine/engine.hpp"
#include "nn/init.hpp"

namespace gs::nn {
namespace {

// x (..., d) with weight (d,) and bias (d,): throws naming the op, the shapes and the call site.
void check_shapes(const char* op, const Shape& xs, const Shape& ws, const Shape& bs, const Site& site) {
  if (xs.empty() || ws.size() != 1 || xs.back() != ws[0] || bs != ws)
    fail(op, site, "needs x (..., d) with weight (d,) and bias (d,), got x " + shape_str(xs) + ", weight " +
                       shape_str(ws) + ", bias " + shape_str(bs));
}

// sigma = sqrt(var + eps) of every row of x, shaped (..., 1): the factor NormGrad::undo_gain puts back.
Array row_sigma(const Array& x, double eps) {
  LayerNormStats stats;
  layernorm_forward(x, xt::ones<Real>({x.shape().back()}), xt::zeros<Real>({x.shape().back()}), eps, stats);
  Shape s = shape_of(x);
  s.back() = 1;
  Array sigma = Array::from_shape(s);
  for (std::size_t r = 0; r < stats.rstd.size(); ++r) sigma.data()[r] = 1.0 / stats.rstd(r);
  return sigma;
}

}  // namespace

// ---- the fused op's arithmetic ----

Array layernorm_forward(const Array& x, const Array& weight, const Array& bias, double eps, LayerNormStats& stats) {
  const std::size_t d = x.shape().back();
  const std::size_t rows = d == 0 ? 0 : x.size() / d;
  const double n = static_cast<double>(d);
  stats.mu = Array::from_shape({rows});
  stats.rstd = Array::from_shape({rows});
  Array y = Array::from_shape(shape_of(x));  // (..., d)
  const Real* X = x.data();
  const Real* W = weight.data();
  const Real* B = bias.data();
  for (std::size_t r = 0; r < rows; ++r) {  // one row (one position) at a time
    const Real* xr = X + r * d;
    double m = 0.0;
    for (std::size_t i = 0; i < d; ++i) m += xr[i];
    m /= n;                                                                 // mu = (1/d) sum_i x_i
    double v = 0.0;
    for (std::size_t i = 0; i < d; ++i) v += (xr[i] - m) * (xr[i] - m);
    v /= n;                                                                 // var = (1/d) sum_i (x_i - mu)^2
    const double s = 1.0 / std::sqrt(v + eps);                              // rstd
    Real* yr = y.data() + r * d;
    for (std::size_t i = 0; i < d; ++i) yr[i] = (xr[i] - m) * s * W[i] + B[i];  // y_i = x_hat_i w_i + b_i
    stats.mu(r) = m;
    stats.rstd(r) = s;
  }
  return y;
}

Grads layernorm_backward(const Array& grad, const Array& x, const Array& weight, const LayerNormStats& stats,
                         NormGrad mode) {
  const std::size_t d = x.shape().back();
  const std::size_t rows = stats.rstd.size();
  const double n = static_cast<double>(d);
  const Real* X = x.data();
  const Real* W = weight.data();
  const Real* G = grad.data();
  Array dx = Array::from_shape(shape_of(x));  // (..., d)
  Array dw = xt::zeros<Real>({d});          // (d,)
  Array db = xt::zeros<Real>({d});          // (d,)
  Real* DW = dw.data();  // raw pointers: an xarray's (i) recomputes the offset from its strides
  Real* DB = db.data();
  for (std::size_t r = 0; r < rows; ++r) {
    const Real* xr = X + r * d;
    const Real* gr = G + r * d;
    const double m = stats.mu(r), s = stats.rstd(r);
    double mean_g_hat = 0.0, mean_g_hat_x_hat = 0.0;
    for (std::size_t i = 0; i < d; ++i) {
      const double x_hat = (xr[i] - m) * s;
      const double g_hat = gr[i] * W[i];                                    // g_hat = g * w
      mean_g_hat += g_hat;
      mean_g_hat_x_hat += g_hat * x_hat;
      DW[i] += gr[i] * x_hat;                                               // dw += g * x_hat
      DB[i] += gr[i];                                                       // db += g
    }
    mean_g_hat /= n;
    mean_g_hat_x_hat /= n;
    // undo_gain: without the factor rstd (times sigma = 1 / rstd); detach_stats: mu, var constant.
    const double scale = mode.undo_gain ? 1.0 : s;
    Real* dxr = dx.data() + r * d;
    for (std::size_t i = 0; i < d; ++i) {
      const double x_hat = (xr[i] - m) * s;
      const double g_hat = gr[i] * W[i];
      dxr[i] = mode.detach_stats ? scale * g_hat                           // dx = rstd * g_hat
                                 : scale * (g_hat - mean_g_hat - x_hat * mean_g_hat_x_hat);
    }
  }
  return {std::move(dx), std::move(dw), std::move(db)};
}

// ---- the two forms on Vars ----

Var layernorm_composite(const Var& x_in, const Var& weight, const Var& bias, double eps, NormGrad mode, Site site) {
  check_shapes("layernorm_composite", x_in.shape(site), weight.shape(site), bias.shape(site), site);
  Tape& tape = x_in.tape(site);
  // undo_gain: x passes an identity whose backward multiplies by sigma, so dL/dx = sigma * (what follows).
  Var x = mode.undo_gain ? scale_gradient(x_in, row_sigma(x_in.value(), eps), site) : x_in;
  // A statistic: an ordinary op, or for detach_stats the same op recorded without a backward (a constant).
  auto statistic = [&](auto compute) {
    if (!mode.detach_stats) return compute();
    NoGradScope constant(tape);
    return compute();
  };
  Var mu = statistic([&] { return mean(x, {-1}, true); });            // (..., 1)  mu = (1/d) sum_i x_i
  Var xc = x - mu;                                                     // (..., d)  x - mu
  Var var = statistic([&] { return mean(xc * xc, {-1}, true); });     // (..., 1)  var = (1/d) sum (x_i - mu)^2
  Var sigma = sqrt(var + eps);                                         // (..., 1)  sigma = sqrt(var + eps)
  Var x_hat = (xc / sigma).named("x_hat");                             // (..., d)  x_hat = (x - mu) / sigma
  return x_hat * weight + bias;                                        // (..., d)  y = x_hat * w + b
}

Var layernorm_fused(const Var& x, const Var& weight, const Var& bias, double eps, NormGrad mode, Site site) {
  check_shapes("layernorm_fused", x.shape(site), weight.shape(site), bias.shape(site), site);
  LayerNormStats stats;
  Array y = layernorm_forward(x.value(), weight.value(), bias.value(), eps, stats);  // (..., d)
  return x.tape(site).record("layernorm_fused", {x, weight, bias}, std::move(y),
                             [stats = std::move(stats), mode](const BackwardArgs& g) -> Grads {
    return layernorm_backward(g.grad, g.in(0), g.in(1), stats, mode);
  }, site);
}

// ---- the module ----

LayerNorm::LayerNorm(std::size_t d, bool fused_op) : NormLayer(d, fused_op) {
  weight = add_parameter("weight", ones({d}));  // [d]
  bias = add_parameter("bias", zeros({d}));     // [d]
}

Var LayerNorm::forward(const Var& x, Site site) const {
  // y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias, over the last axis
  if (fused) return layernorm_fused(x, Var(weight, site), Var(bias, site), eps, backward_mode, site);
  return layernorm_composite(x, Var(weight, site), Var(bias, site), eps, backward_mode, site);
}

}  // namespace gs::nn
