#include "experiments/lib/stats.hpp"

#include <cmath>
#include <cstdio>

namespace gs::experiments {

Stat stat_of(const std::vector<double>& values) {
  Stat s;
  s.n = values.size();
  if (s.n == 0) return s;
  for (double v : values) s.mean += v;
  s.mean /= static_cast<double>(s.n);
  if (s.n > 1) {
    double ss = 0.0;
    for (double v : values) ss += (v - s.mean) * (v - s.mean);
    s.std = std::sqrt(ss / static_cast<double>(s.n - 1));
  }
  return s;
}

std::string fmt(double value, int significant) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, value);
  return buf;
}

std::string fmt(const Stat& s, int significant) {
  if (s.n <= 1) return fmt(s.mean, significant);
  return fmt(s.mean, significant) + " ± " + fmt(s.std, 2);
}

std::string finite_cell(const std::vector<double>& values, const std::string& otherwise) {
  for (double v : values)
    if (!std::isfinite(v)) return otherwise;
  return fmt(stat_of(values), 3);
}

double mean_of(const std::vector<double>& values) {
  double s = 0.0;
  for (double x : values) s += x;
  return values.empty() ? NAN : s / static_cast<double>(values.size());
}

std::string finite_stat(const std::vector<double>& values, int digits) {
  std::vector<double> finite;
  for (double x : values)
    if (std::isfinite(x)) finite.push_back(x);
  return finite.empty() ? "-" : fmt(stat_of(finite), digits);
}

}  // namespace gs::experiments
