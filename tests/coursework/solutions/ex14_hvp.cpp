// Reference solution of exercise 14 (docs/coursework.md#ex14).
#include "../ex14_hvp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/tape.hpp"

namespace gs::coursework {

std::vector<Array> hessian_vector_product(const analysis::LossFunction& loss, std::vector<Parameter> parameters,
                                          const std::vector<Array>& v) {
  double theta2 = 0.0, v2 = 0.0;
  for (const Parameter& p : parameters) theta2 += xt::sum(p.value() * p.value())();
  for (const Array& a : v) v2 += xt::sum(a * a)();
  if (v2 == 0.0) {  // H 0 = 0
    std::vector<Array> zeros;
    for (const Array& a : v) zeros.push_back(xt::zeros_like(a));
    return zeros;
  }
  const double h = std::cbrt(std::numeric_limits<double>::epsilon()) * std::max(std::sqrt(theta2), 1.0) / std::sqrt(v2);

  std::vector<Array> saved;
  for (const Parameter& p : parameters) saved.push_back(p.value());
  // g(saved + sign * h v), one array per parameter
  auto gradient_at = [&](double sign) {
    for (std::size_t i = 0; i < parameters.size(); ++i) parameters[i].value() = saved[i] + sign * h * v[i];
    Tape::current().reset();
    for (Parameter& p : parameters) p.zero_grad();
    loss().backward();
    std::vector<Array> g;
    for (const Parameter& p : parameters) g.push_back(p.grad());
    return g;
  };
  std::vector<Array> plus = gradient_at(+1.0), minus = gradient_at(-1.0);
  for (std::size_t i = 0; i < parameters.size(); ++i) parameters[i].value() = saved[i];  // bit for bit
  Tape::current().reset();
  for (std::size_t i = 0; i < plus.size(); ++i) plus[i] = (plus[i] - minus[i]) / (2.0 * h);
  return plus;
}

}  // namespace gs::coursework
