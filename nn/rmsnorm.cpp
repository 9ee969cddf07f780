// RMSNorm, composite and fused; the fused backward is derived in docs/layernorm.md.
#include "nn/rmsnorm.hpp"

#include <cmath>

#include "engine/engine.hpp"
#include "nn/init.hpp"

namespace gs::nn {
namespace {

// x (..., d) with weight (d,): throws naming the op, the shapes and the call site.
void check_shapes(const char* op, const Shape& xs, const Shape& ws, const Site& site) {
  if (xs.empty() || ws.size() != 1 || xs.back() != ws[0])
    fail(op, site, "needs x (..., d) with weight (d,), got x " + shape_str(xs) + ", weight " + shape_str(ws));
}

}  // namespace

// ---- the fused op's arithmetic ----

Array rmsnorm_forward(const Array& x, const Array& weight, double eps, Array& rstd) {
  const std::size_t d = x.shape().back();
  const std::size_t rows = d == 0 ? 0 : x.size() / d;
  const double n = static_cast<double>(d);
  rstd = Array::from_shape({rows});
  Array y = Array::from_shape(shape_of(x));  // (..., d)
  const Real* X = x.data();
  const Real* W = weight.data();
  for (std::size_t r = 0; r < rows; ++r) {
    const Real* xr = X + r * d;
    double ms = 0.0;
    for (std::size_t i = 0; i < d; ++i) ms += xr[i] * xr[i];
    ms /= n;                                                  // ms = (1/d) sum_i x_i^2
    const double s = 1.0 / std::sqrt(ms + eps);               // rstd
    Real* yr = y.data() + r * d;
    for (std::size_t i = 0; i < d; ++i) yr[i] = xr[i] * s * W[i];  // y_i = x_hat_i w_i
    rstd(r) = s;
  }
  return y;
}

Grads rmsnorm_backward(const Array& grad, const Array& x, const Array& weight, const Array& rstd, NormGrad mode) {
  const std::size_t d = x.shape().back();
  const std::size_t rows = rstd.size();
  const double n = static_cast<double>(d);
  const Real* X = x.data();
  const Real* W = weight.data();
  const Real* G = grad.data();
  Array dx = Array::from_shape(shape_of(x));  // (..., d)
  Array dw = xt::zeros<Real>({d});          // (d,)
  Real* DW = dw.data();
  for (std::size_t r = 0; r < rows; ++r) {
    const Real* xr = X + r * d;
    const Real* gr = G + r * d;
    const double s = rstd(r);
    double mean_g_hat_x_hat = 0.0;
    for (std::size_t i = 0; i < d; ++i) {
      const double x_hat = xr[i] * s;
      mean_g_hat_x_hat += gr[i] * W[i] * x_hat;
      DW[i] += gr[i] * x_hat;                                 // dw += g * x_hat
    }
    mean_g_hat_x_hat /= n;
    // undo_gain: without the factor rstd (times rms = 1 / rstd); detach_stats: the mean square constant.
    const double scale = mode.undo_gain ? 1.0 : s;
    Real* dxr = dx.data() + r * d;
    for (std::size_t i = 0; i < d; ++i) {
      const double x_hat = xr[i] * s;
      dxr[i] = mode.detach_stats ? scale * (gr[i] * W[i])    // dx = rstd * g_hat
                                 : scale * (gr[i] * W[i] - x_hat * mean_g_hat_x_hat);
    }
  }
  return {std::move(dx), std::move(dw)};
}

// ---- the two forms on Vars ----

Var rmsnorm_composite(const Var& x_in, const Var& weight, double eps, NormGrad mode, Site site) {
  check_shapes("rmsnorm_composite", x_in.shape(site), weight.shape(site), site);
  Tape& tape = x_in.tape(site);
  Var x = x_in;
  if (mode.undo_gain) {  // an identity whose backward multiplies by rms = 1 / rstd, per row
    Array rstd;
    rmsnorm_forward(x_in.value(), xt::ones<Real>({x_in.shape().back()}), eps, rstd);
    Shape s = x_in.shape();
    s.back() = 1;
    Array rms = Array::from_shape(s);
    for (std::size_t r = 0; r < rstd.size(); ++r) rms.data()[r] = 1.0 / rstd(r);
    x = scale_gradient(x_in, std::move(rms), site);
  }
  Var ms;
  if (mode.detach_stats) {  // the mean square recorded without a backward: a constant
    NoGradScope constant(tape);
    ms = mean(x * x, {-1}, true);
  } else {
    ms = mean(x * x, {-1}, true);            // (..., 1)  ms = (1/d) sum_i x_i^2
  }
  Var rms = sqrt(ms + eps);                  // (..., 1)  rms = sqrt(ms + eps)
  Var x_hat = (x / rms).named("x_hat");      // (..., d)  x_hat = x / rms
  return x_hat * weight;                     // (..., d)  y = x_hat * w
}

Var rmsnorm_fused(const Var& x, const Var& weight, double eps, NormGrad mode, Site site) {
  check_shapes("rmsnorm_fused", x.shape(site), weight.shape(site), site);
  Array rstd;
  Array y = rmsnorm_forward(x.value(), weight.value(), eps, rstd);  // (..., d)
  return x.tape(site).record("rmsnorm_fused", {x, weight}, std::move(y),
                             [rstd = std::move(rstd), mode](const BackwardArgs& g) -> Grads {
    return rmsnorm_backward(g.grad, g.in(0), g.in(1), rstd, mode);
  }, site);
}

// ---- the module ----

RMSNorm::RMSNorm(std::size_t d, bool fused_op) : NormLayer(d, fused_op) {
  weight = add_parameter("weight", ones({d}));  // [d]
}

Var RMSNorm::forward(const Var& x, Site site) const {
  // y = x / sqrt(mean(x^2) + eps) * weight, over the last axis
  if (fused) return rmsnorm_fused(x, Var(weight, site), eps, backward_mode, site);
  return rmsnorm_composite(x, Var(weight, site), eps, backward_mode, site);
}

}  // namespace gs::nn
