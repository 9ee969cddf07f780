#include "check.hpp"

#include <cmath>
#include <random>

namespace gs::test {

Array randn(const Shape& shape, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Array x = Array::from_shape(shape);
  for (double& v : x) v = normal(rng);
  return x;
}

Array randn_away_from_zero(const Shape& shape, unsigned seed) {
  Array x = randn(shape, seed);
  for (double& v : x) v = v >= 0 ? v + 0.5 : v - 0.5;
  return x;
}

Array randn_positive(const Shape& shape, unsigned seed) {
  Array x = randn(shape, seed);
  for (double& v : x) v = std::abs(v) + 0.5;
  return x;
}

}  // namespace gs::test
