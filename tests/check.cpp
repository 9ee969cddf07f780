#include "check.hpp"

#include <cmath>
#include <cstdio>
#include <random>

namespace gs::test {

Array randn(const Shape& shape, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Array x = Array::from_shape(shape);
  for (Real& v : x) v = normal(rng);
  return x;
}

Array randn_away_from_zero(const Shape& shape, unsigned seed) {
  Array x = randn(shape, seed);
  for (Real& v : x) v = v >= 0 ? v + 0.5 : v - 0.5;
  return x;
}

Array randn_positive(const Shape& shape, unsigned seed) {
  Array x = randn(shape, seed);
  for (Real& v : x) v = std::abs(v) + 0.5;
  return x;
}

namespace {

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", x);
  return text;
}

// The multi-index of flat (row-major) position i in shape: "(1, 2)".
std::string index_of(std::size_t i, const Shape& shape) {
  std::vector<std::size_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = i % shape[d];
    i /= shape[d];
  }
  std::string s = "(";
  for (std::size_t d = 0; d < index.size(); ++d) s += (d ? ", " : "") + std::to_string(index[d]);
  return s + (index.size() == 1 ? ",)" : ")");
}

}  // namespace

std::string difference(const Array& yours, const Array& expected, double rtol, double atol) {
  if (yours.shape() != expected.shape())
    return "yours has shape " + shape_str(shape_of(yours)) + ", expected " + shape_str(shape_of(expected));
  std::size_t worst = 0;
  double worst_excess = -INFINITY, largest_abs = 0.0, largest_rel = 0.0;
  for (std::size_t i = 0; i < yours.size(); ++i) {
    const double a = yours.flat(i), b = expected.flat(i), diff = std::abs(a - b);
    // NaN anywhere is a difference (allclose's rule): it counts as infinitely far.
    const double excess = std::isnan(diff) ? INFINITY : diff - (atol + rtol * std::abs(b));
    if (excess > worst_excess) worst_excess = excess, worst = i;
    largest_abs = std::max(largest_abs, std::isnan(diff) ? INFINITY : diff);
    if (b != 0.0) largest_rel = std::max(largest_rel, std::isnan(diff) ? INFINITY : diff / std::abs(b));
  }
  if (yours.size() == 0 || worst_excess <= 0.0) return "";
  char tolerance[96];
  std::snprintf(tolerance, sizeof tolerance, "%g + %g |expected|", atol, rtol);
  return "worst at " + index_of(worst, shape_of(yours)) + ": yours " + number(yours.flat(worst)) + ", expected " +
         number(expected.flat(worst)) + "; largest |difference| " + number(largest_abs) +
         ", largest relative difference " + number(largest_rel) + "; tolerance " + tolerance + " (shape " +
         shape_str(shape_of(yours)) + ")";
}

std::string not_small(double value, double tolerance) {
  if (std::abs(value) <= tolerance) return "";
  char text[96];
  std::snprintf(text, sizeof text, "is %.10g, more than the tolerance %g from 0", value, tolerance);
  return text;
}

}  // namespace gs::test
