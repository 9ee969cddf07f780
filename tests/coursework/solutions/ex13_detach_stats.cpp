// Reference solution of exercise 13 (docs/coursework.md#ex13).
#include "../ex13_detach_stats.hpp"

#include <cmath>

#include <xtensor/xbuilder.hpp>

namespace gs::coursework {

Grads layernorm_backward_detached(const Array& grad, const Array& x, const Array& weight, double eps) {
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
    for (std::size_t i = 0; i < d; ++i) {
      dx.data()[r * d + i] = rstd * gr[i] * weight(i);  // mu and var constants: dx = rstd * g * w
      dw(i) += gr[i] * (xr[i] - mu) * rstd;
      db(i) += gr[i];
    }
  }
  return {std::move(dx), std::move(dw), std::move(db)};
}

}  // namespace gs::coursework
