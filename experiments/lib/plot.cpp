#include "experiments/lib/plot.hpp"

#include <algorithm>
#include <cmath>

#include "experiments/lib/stats.hpp"

namespace gs::experiments {

Series flat_line(std::string title, double x0, double x1, double y) { return {std::move(title), {x0, x1}, {y, y}, {}}; }

Series stat_line(std::string title, const std::vector<double>& x, const std::function<std::vector<double>(std::size_t)>& values) {
  Series s{std::move(title), x, {}, {}};
  for (std::size_t i = 0; i < x.size(); ++i) {
    const Stat st = stat_of(values(i));
    s.y.push_back(st.mean);
    s.err.push_back(st.std);
  }
  return s;
}

Series loss_curve(const std::vector<const std::vector<double>*>& losses, std::size_t steps, std::size_t window,
                  std::string title) {
  Series s{std::move(title), {}, {}, {}};
  for (std::size_t start = 0; start + window <= steps; start += window) {
    double sum = 0.0;
    for (const std::vector<double>* run : losses)
      for (std::size_t k = start; k < start + window; ++k) sum += k < run->size() ? (*run)[k] : NAN;
    const double mean = sum / static_cast<double>(window * losses.size());
    if (!std::isfinite(mean)) break;
    s.x.push_back(static_cast<double>(start + window));
    s.y.push_back(mean);
  }
  return s;
}

std::string drop_nonpositive(std::vector<Series>& series, bool say_why) {
  std::vector<Series> kept;
  std::string dropped;
  for (Series& s : series) {
    const bool positive = !s.y.empty() && std::all_of(s.y.begin(), s.y.end(), [](double y) { return y > 0.0; });
    if (positive) {
      kept.push_back(std::move(s));
      continue;
    }
    const bool zero = std::all_of(s.y.begin(), s.y.end(), [](double y) { return y == 0.0; });
    dropped += (dropped.empty() ? "" : ", ") + s.title + (!say_why ? "" : zero ? " (exactly 0)" : " (not all > 0)");
  }
  series = std::move(kept);
  return dropped;
}

namespace {

// gnuplot calls a range beyond about 1e307 undefined (its tics and padding overflow a double there): a
// point is drawn only within +-1e300.
constexpr double gnuplot_limit = 1e300;

// Whether gnuplot can place a point: finite coordinates within its range, > 0 on a log axis.
bool drawable(const Plot& plot, double x, double y) {
  return std::isfinite(x) && std::isfinite(y) && std::abs(x) <= gnuplot_limit && std::abs(y) <= gnuplot_limit &&
         (!plot.log_x || x > 0) && (!plot.log_y || y > 0);
}

// Why no point of `s` can be drawn: "every value is 0", "every value is NaN/Inf", ...
std::string degenerate_because(const Plot& plot, const Series& s) {
  if (s.y.empty()) return "no values";
  if (std::all_of(s.y.begin(), s.y.end(), [](double y) { return !std::isfinite(y); })) return "every value is NaN/Inf";
  if (std::all_of(s.y.begin(), s.y.end(), [](double y) { return y == 0.0; })) return "every value is 0";
  const auto beyond = [](double v) { return std::isfinite(v) && std::abs(v) > gnuplot_limit; };
  if (std::any_of(s.x.begin(), s.x.end(), beyond) || std::any_of(s.y.begin(), s.y.end(), beyond))
    return "its points lie beyond 1e300, outside what gnuplot can draw";
  return plot.log_y ? "no value is finite and > 0 (a log axis)" : "no point is finite";
}

}  // namespace

Plot without_degenerate_series(Plot plot, std::string& note) {
  std::vector<Series> kept;
  for (Series& s : plot.series) {
    bool any = false;
    for (std::size_t i = 0; i < s.x.size() && !any; ++i) any = drawable(plot, s.x[i], s.y[i]);
    if (any)
      kept.push_back(std::move(s));
    else
      note += (note.empty() ? "" : "; ") + ("'" + s.title + "': " + degenerate_because(plot, s));
  }
  plot.series = std::move(kept);
  return plot;
}

std::string file_part(std::string label) {
  for (char& c : label)
    if (c == '/') c = '-';
  return label;
}

}  // namespace gs::experiments
