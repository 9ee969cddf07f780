// What every experiment reports: statistics over seeds, an aligned table for the terminal (also
// written as CSV), and line plots drawn by gnuplot into PNG and SVG.
#pragma once

#include <filesystem>
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

// Rows of text cells under named columns.
class Table {
 public:
  explicit Table(std::vector<std::string> columns);
  void add_row(std::vector<std::string> cells);  // one cell per column
  std::string to_text() const;                   // aligned columns, a rule under the header
  // The same cells as CSV, written atomically (a temporary file renamed into place).
  void write_csv(const std::filesystem::path& path) const;

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// One line of a plot; err (if not empty) draws error bars of +- err.
struct Series {
  std::string title;
  std::vector<double> x, y, err;
};

struct Plot {
  std::string title, xlabel, ylabel;
  bool log_x = false, log_y = false;
  std::vector<Series> series;
};

// Writes DIR/NAME.dat (the data, one block per series) and DIR/NAME.gp (the gnuplot script), then
// runs gnuplot to draw DIR/NAME.png and DIR/NAME.svg. Throws gs::Error if gnuplot fails.
void draw(const Plot& plot, const std::filesystem::path& dir, const std::string& name);

}  // namespace gs::experiments
