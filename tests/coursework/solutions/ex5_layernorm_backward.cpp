// Reference solution of exercise 5 (docs/coursework.md#ex5).
#include "../ex5_layernorm_backward.hpp"

#include <cmath>

#include <xtensor/xbuilder.hpp>

namespace gs::coursework {

Grads layernorm_backward(const Array& grad, const Array& x, const Array& weight, double eps) {
  const std::size_t d = x.shape().back(), rows = d == 0 ? 0 : x.size() / d;
  const double n = static_cast<double>(d);
  Array dx = Array::from_shape(shape_of(x));  // (..., d)
  Array dw = xt::zeros<Real>({d});          // (d,)
  Array db = xt::zeros<Real>({d});          // (d,)
  for (std::size_t r = 0; r < rows; ++r) {
    const Real* xr = x.data() + r * d;
    const Real* gr = grad.data() + r * d;
    double mu = 0.0, var = 0.0;
    for (std::size_t i = 0; i < d; ++i) mu += xr[i] / n;
    for (std::size_t i = 0; i < d; ++i) var += (xr[i] - mu) * (xr[i] - mu) / n;
    const double rstd = 1.0 / std::sqrt(var + eps);
    double mean_g_hat = 0.0, mean_g_hat_x_hat = 0.0;  // what flows back through mu and through var
    for (std::size_t i = 0; i < d; ++i) {
      const double x_hat = (xr[i] - mu) * rstd, g_hat = gr[i] * weight(i);
      mean_g_hat += g_hat / n;
      mean_g_hat_x_hat += g_hat * x_hat / n;
      dw(i) += gr[i] * x_hat;
      db(i) += gr[i];
    }
    Real* dxr = dx.data() + r * d;
    for (std::size_t i = 0; i < d; ++i) {
      const double x_hat = (xr[i] - mu) * rstd, g_hat = gr[i] * weight(i);
      dxr[i] = rstd * (g_hat - mean_g_hat - x_hat * mean_g_hat_x_hat);
    }
  }
  return {std::move(dx), std::move(dw), std::move(db)};
}

}  // namespace gs::coursework
