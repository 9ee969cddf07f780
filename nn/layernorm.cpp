// LayerNorm and RMSNorm, composite and fused. The fused backward passes are derived in
// docs/layernorm.md with the same variable names as here.
#include "nn/layernorm.hpp"

#include <cmath>

#include "engine/engine.hpp"
#include "nn/init.hpp"

namespace gs::nn {
namespace {

// x (..., d) with weight (d,) (and bias (d,)): throws naming the op, the shapes and the call site.
void check_norm_shapes(const char* op, const Shape& xs, const Shape& ws, const Shape* bs, const Site& site) {
  if (xs.empty() || ws.size() != 1 || xs.back() != ws[0] || (bs && *bs != ws))
    fail(op, site, "needs x (..., d) with weight (d,)" + std::string(bs ? " and bias (d,)" : "") + ", got x " +
                       shape_str(xs) + ", weight " + shape_str(ws) + (bs ? ", bias " + shape_str(*bs) : ""));
}

}  // namespace

// ---- LayerNorm ----

Var layernorm_composite(const Var& x, const Var& weight, const Var& bias, double eps, Site site) {
  const Shape bs = bias.shape(site);
  check_norm_shapes("layernorm", x.shape(site), weight.shape(site), &bs, site);
  Var mu = mean(x, {-1}, true);                  // (..., 1)  mu = (1/d) sum_i x_i
  Var xc = x - mu;                               // (..., d)  x - mu
  Var var = mean(xc * xc, {-1}, true);           // (..., 1)  var = (1/d) sum_i (x_i - mu)^2, biased
  Var sigma = sqrt(var + eps);                   // (..., 1)  sigma = sqrt(var + eps)
  Var x_hat = (xc / sigma).named("x_hat");       // (..., d)  x_hat = (x - mu) / sigma
  return x_hat * weight + bias;                  // (..., d)  y = x_hat * w + b
}

Var layernorm_fused(const Var& x, const Var& weight, const Var& bias, double eps, Site site) {
  const Shape xs = x.shape(site), bs = bias.shape(site);
  check_norm_shapes("layernorm_fused", xs, weight.shape(site), &bs, site);
  const std::size_t d = xs.back();
  const std::size_t rows = x.value().size() / d;
  const double n = static_cast<double>(d);

  // Forward, one row (one position) at a time:
  //   mu = (1/d) sum_i x_i,  var = (1/d) sum_i (x_i - mu)^2,  rstd = 1 / sqrt(var + eps)
  //   x_hat_i = (x_i - mu) * rstd,  y_i = x_hat_i * w_i + b_i
  // mu and rstd (one number per row each) are kept for the backward pass.
  Array mu = Array::from_shape({rows});
  Array rstd = Array::from_shape({rows});
  Array y = Array::from_shape(xs);
  const double* X = x.value().data();
  const double* W = weight.value().data();
  const double* B = bias.value().data();
  for (std::size_t r = 0; r < rows; ++r) {
    const double* xr = X + r * d;
    double m = 0.0;
    for (std::size_t i = 0; i < d; ++i) m += xr[i];
    m /= n;
    double v = 0.0;
    for (std::size_t i = 0; i < d; ++i) v += (xr[i] - m) * (xr[i] - m);
    v /= n;
    const double s = 1.0 / std::sqrt(v + eps);
    double* yr = y.data() + r * d;
    for (std::size_t i = 0; i < d; ++i) yr[i] = (xr[i] - m) * s * W[i] + B[i];
    mu(r) = m;
    rstd(r) = s;
  }

  // Backward (docs/layernorm.md), per row with g = dL/dy and g_hat = g * w:
  //   dx = rstd * (g_hat - mean(g_hat) - x_hat * mean(g_hat * x_hat))
  //   dw = sum over rows of g * x_hat,   db = sum over rows of g
  return x.tape(site).record("layernorm_fused", {x, weight, bias}, std::move(y),
                             [mu, rstd, d, rows](const BackwardArgs& g) -> Grads {
    const double n = static_cast<double>(d);  // gdb-walkthrough: break here (docs/debugging.md)
    const double* X = g.in(0).data();
    const double* W = g.in(1).data();
    const double* G = g.grad.data();
    Array dx = Array::from_shape(shape_of(g.in(0)));
    Array dw = xt::zeros<double>({d});
    Array db = xt::zeros<double>({d});
    double* DW = dw.data();  // raw pointers: an xarray's (i) recomputes the offset from its strides
    double* DB = db.data();
    for (std::size_t r = 0; r < rows; ++r) {
      const double* xr = X + r * d;
      const double* gr = G + r * d;
      const double m = mu(r), s = rstd(r);
      double mean_g_hat = 0.0, mean_g_hat_x_hat = 0.0;
      for (std::size_t i = 0; i < d; ++i) {
        const double x_hat = (xr[i] - m) * s;
        const double g_hat = gr[i] * W[i];
        mean_g_hat += g_hat;
        mean_g_hat_x_hat += g_hat * x_hat;
        DW[i] += gr[i] * x_hat;
        DB[i] += gr[i];
      }
      mean_g_hat /= n;
      mean_g_hat_x_hat /= n;
      double* dxr = dx.data() + r * d;
      for (std::size_t i = 0; i < d; ++i) {
        const double x_hat = (xr[i] - m) * s;
        const double g_hat = gr[i] * W[i];
        dxr[i] = s * (g_hat - mean_g_hat - x_hat * mean_g_hat_x_hat);
      }
    }
    return {std::move(dx), std::move(dw), std::move(db)};
  }, site);
}

// ---- RMSNorm ----

Var rmsnorm_composite(const Var& x, const Var& weight, double eps, Site site) {
  check_norm_shapes("rmsnorm", x.shape(site), weight.shape(site), nullptr, site);
  Var ms = mean(x * x, {-1}, true);          // (..., 1)  ms = (1/d) sum_i x_i^2
  Var rms = sqrt(ms + eps);                  // (..., 1)  rms = sqrt(ms + eps)
  Var x_hat = (x / rms).named("x_hat");      // (..., d)  x_hat = x / rms
  return x_hat * weight;                     // (..., d)  y = x_hat * w
}

Var rmsnorm_fused(const Var& x, const Var& weight, double eps, Site site) {
  const Shape xs = x.shape(site);
  check_norm_shapes("rmsnorm_fused", xs, weight.shape(site), nullptr, site);
  const std::size_t d = xs.back();
  const std::size_t rows = x.value().size() / d;
  const double n = static_cast<double>(d);

  // Forward per row:  rstd = 1 / sqrt((1/d) sum_i x_i^2 + eps),  x_hat_i = x_i * rstd,  y_i = x_hat_i * w_i
  Array rstd = Array::from_shape({rows});
  Array y = Array::from_shape(xs);
  const double* X = x.value().data();
  const double* W = weight.value().data();
  for (std::size_t r = 0; r < rows; ++r) {
    const double* xr = X + r * d;
    double ms = 0.0;
    for (std::size_t i = 0; i < d; ++i) ms += xr[i] * xr[i];
    ms /= n;
    const double s = 1.0 / std::sqrt(ms + eps);
    double* yr = y.data() + r * d;
    for (std::size_t i = 0; i < d; ++i) yr[i] = xr[i] * s * W[i];
    rstd(r) = s;
  }

  // Backward (docs/layernorm.md), per row with g_hat = g * w:
  //   dx = rstd * (g_hat - x_hat * mean(g_hat * x_hat)),   dw = sum over rows of g * x_hat
  return x.tape(site).record("rmsnorm_fused", {x, weight}, std::move(y),
                             [rstd, d, rows](const BackwardArgs& g) -> Grads {
    const double n = static_cast<double>(d);
    const double* X = g.in(0).data();
    const double* W = g.in(1).data();
    const double* G = g.grad.data();
    Array dx = Array::from_shape(shape_of(g.in(0)));
    Array dw = xt::zeros<double>({d});
    double* DW = dw.data();
    for (std::size_t r = 0; r < rows; ++r) {
      const double* xr = X + r * d;
      const double* gr = G + r * d;
      const double s = rstd(r);
      double mean_g_hat_x_hat = 0.0;
      for (std::size_t i = 0; i < d; ++i) {
        const double x_hat = xr[i] * s;
        mean_g_hat_x_hat += gr[i] * W[i] * x_hat;
        DW[i] += gr[i] * x_hat;
      }
      mean_g_hat_x_hat /= n;
      double* dxr = dx.data() + r * d;
      for (std::size_t i = 0; i < d; ++i) {
        const double x_hat = xr[i] * s;
        dxr[i] = s * (gr[i] * W[i] - x_hat * mean_g_hat_x_hat);
      }
    }
    return {std::move(dx), std::move(dw)};
  }, site);
}

// ---- the modules ----

LayerNorm::LayerNorm(std::size_t d, bool fused_op) : dim(d), fused(fused_op) {
  weight = add_parameter("weight", ones({d}));  // [d]
  bias = add_parameter("bias", zeros({d}));     // [d]
}

Var LayerNorm::forward(const Var& x, Site site) const {
  // y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias, over the last axis
  if (fused) return layernorm_fused(x, Var(weight, site), Var(bias, site), eps, site);
  return layernorm_composite(x, Var(weight, site), Var(bias, site), eps, site);
}

RMSNorm::RMSNorm(std::size_t d, bool fused_op) : dim(d), fused(fused_op) {
  weight = add_parameter("weight", ones({d}));  // [d]
}

Var RMSNorm::forward(const Var& x, Site site) const {
  // y = x / sqrt(mean(x^2) + eps) * weight, over the last axis
  if (fused) return rmsnorm_fused(x, Var(weight, site), eps, site);
  return rmsnorm_composite(x, Var(weight, site), eps, site);
}

}  // namespace gs::nn
