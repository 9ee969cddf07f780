// Statistics over seeds and the numbers' text in tables: the mean and its spread, "1.234 ± 0.012".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gs::experiments {

// The mean and the sample standard deviation (n - 1 in the denominator; 0 for a single value).
struct Stat {
  double mean = 0.0;
  double std = 0.0;
  std::size_t n = 0;
};
Stat stat_of(const std::vector<double>& values);

std::string fmt(double value, int significant = 4);  // "0.01234", "1.235e+05"
std::string fmt(const Stat& s, int significant = 4); // "1.234 ± 0.012" (just the mean when n = 1)

// fmt(stat_of(values), 3), or `otherwise` when a value is not finite (a slope that could not be fitted).
std::string finite_cell(const std::vector<double>& values, const std::string& otherwise);

// The mean of the values (NaN for none).
double mean_of(const std::vector<double>& values);
// fmt(stat_of(the finite values), digits), "-" if none is finite (a run that blew up; 0/0).
std::string finite_stat(const std::vector<double>& values, int digits = 3);

}  // namespace gs::experiments
