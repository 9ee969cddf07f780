#include "nn/dyt.hpp"

#include <cmath>

#include "engine/engine.hpp"
#include "nn/init.hpp"

namespace gs::nn {
namespace {

// x (..., d) with weight (d,), bias (d,) and alpha (1,): throws naming the op, the shapes and the call site.
void check_shapes(const char* op, const Shape& xs, const Shape& ws, const Shape& bs, const Shape& as,
                  const Site& site) {
  if (xs.empty() || ws.size() != 1 || xs.back() != ws[0] || bs != ws || as != Shape{1})
    fail(op, site, "needs x (..., d) with weight (d,), bias (d,) and alpha (1,), got x " + shape_str(xs) +
                       ", weight " + shape_str(ws) + ", bias " + shape_str(bs) + ", alpha " + shape_str(as));
}

}  // namespace

// ---- the fused op's arithmetic ----

Array dyt_forward(const Array& x, const Array& weight, const Array& bias, const Array& alpha) {
  const std::size_t d = x.shape().back();
  const std::size_t rows = d == 0 ? 0 : x.size() / d;
  const double a = alpha(0);
  const Real* X = x.data();
  const Real* W = weight.data();
  const Real* B = bias.data();
  Array y = Array::from_shape(shape_of(x));  // (..., d)
  for (std::size_t r = 0; r < rows; ++r) {
    const Real* xr = X + r * d;
    Real* yr = y.data() + r * d;
    for (std::size_t i = 0; i < d; ++i) yr[i] = std::tanh(a * xr[i]) * W[i] + B[i];  // y = tanh(alpha x) w + b
  }
  return y;
}

Grads dyt_backward(const Array& grad, const Array& x, const Array& weight, const Array& alpha) {
  const std::size_t d = x.shape().back();
  const std::size_t rows = d == 0 ? 0 : x.size() / d;
  const double a = alpha(0);
  const Real* X = x.data();
  const Real* W = weight.data();
  const Real* G = grad.data();
  Array dx = Array::from_shape(shape_of(x));  // (..., d)
  Array dw = xt::zeros<Real>({d});          // (d,)
  Array db = xt::zeros<Real>({d});          // (d,)
  double dalpha = 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    const Real* xr = X + r * d;
    const Real* gr = G + r * d;
    Real* dxr = dx.data() + r * d;
    for (std::size_t i = 0; i < d; ++i) {
      const double t = std::tanh(a * xr[i]);          // t = tanh(alpha x)
      const double u = gr[i] * W[i] * (1.0 - t * t);  // u = dL/d(alpha x) = g w (1 - t^2)
      dxr[i] = a * u;                                 // dx = alpha u
      dalpha += u * xr[i];                            // dalpha = sum u x
      dw.data()[i] += gr[i] * t;                      // dw = sum over rows of g t
      db.data()[i] += gr[i];                          // db = sum over rows of g
    }
  }
  return {std::move(dx), std::move(dw), std::move(db), Array{dalpha}};
}

// ---- the two forms on Vars ----

Var dyt_composite(const Var& x, const Var& weight, const Var& bias, const Var& alpha, Site site) {
  check_shapes("dyt_composite", x.shape(site), weight.shape(site), bias.shape(site), alpha.shape(site), site);
  Var t = tanh(alpha * x);   // (..., d)  t = tanh(alpha x), alpha (1,) broadcast
  return t * weight + bias;  // (..., d)  y = t * w + b
}

Var dyt_fused(const Var& x, const Var& weight, const Var& bias, const Var& alpha, Site site) {
  check_shapes("dyt_fused", x.shape(site), weight.shape(site), bias.shape(site), alpha.shape(site), site);
  Array y = dyt_forward(x.value(), weight.value(), bias.value(), alpha.value());  // (..., d)
  return x.tape(site).record("dyt_fused", {x, weight, bias, alpha}, std::move(y), [](const BackwardArgs& g) -> Grads {
    return dyt_backward(g.grad, g.in(0), g.in(1), g.in(3));
  }, site);
}

// ---- the module ----

DyT::DyT(std::size_t d, double alpha0, bool fused_op) : NormLayer(d, fused_op) {
  weight = add_parameter("weight", ones({d}));  // [d]  gamma
  bias = add_parameter("bias", zeros({d}));     // [d]  beta
  alpha = add_parameter("alpha", Array{alpha0});  // [1]
}

Var DyT::forward(const Var& x, Site site) const {
  if (backward_mode.changed())
    fail("DyT", site, "ln-undo-gain and ln-detach-stats need a norm with statistics (layer or rms); DyT has none");
  // y = weight * tanh(alpha * x) + bias
  if (fused) return dyt_fused(x, Var(weight, site), Var(bias, site), Var(alpha, site), site);
  return dyt_composite(x, Var(weight, site), Var(bias, site), Var(alpha, site), site);
}

}  // namespace gs::nn
