#include "nn/init.hpp"

#include <cmath>
#include <numbers>

namespace gs::nn {
namespace {

// A uniform double in [0, 1) from the top 53 bits of one draw.
double unit_uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

Array uniform(const Shape& shape, double low, double high, std::mt19937_64& rng) {
  Array x = Array::from_shape(shape);
  for (Real& v : x) v = low + (high - low) * unit_uniform(rng);
  return x;
}

Array normal(const Shape& shape, double mean, double std, std::mt19937_64& rng) {
  Array x = Array::from_shape(shape);
  // Box-Muller: u1 in (0, 1], u2 in [0, 1) give z = sqrt(-2 ln u1) cos(2 pi u2) ~ N(0, 1).
  for (Real& v : x) {
    const double u1 = 1.0 - unit_uniform(rng);
    const double u2 = unit_uniform(rng);
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    v = mean + std * z;
  }
  return x;
}

Array xavier_uniform(std::size_t fan_in, std::size_t fan_out, std::mt19937_64& rng) {
  const double a = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));  // Var = a^2/3 = 2/(in+out)
  return uniform({fan_in, fan_out}, -a, a, rng);
}

Array zeros(const Shape& shape) { return xt::zeros<Real>(shape); }
Array ones(const Shape& shape) { return xt::ones<Real>(shape); }

Array Initializer::linear_weight(std::size_t in, std::size_t out) {
  if (scheme_ == Init::gpt2) return normal({in, out}, 0.0, 0.02, rng_);
  return xavier_uniform(in, out, rng_);
}

Array Initializer::embedding(std::size_t rows, std::size_t d) {
  return normal({rows, d}, 0.0, scheme_ == Init::gpt2 ? 0.02 : 1.0, rng_);
}

}  // namespace gs::nn
