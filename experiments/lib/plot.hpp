// Line plots of results: the series (a mean over seeds with its spread, a loss curve, a threshold),
// and draw(), which writes the data and a gnuplot script beside the PNG and SVG that gnuplot draws.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace gs::experiments {

// One line of a plot; err (if not empty) draws error bars of +- err.
struct Series {
  std::string title;
  std::vector<double> x, y, err;
};

// A horizontal line from x0 to x1 at height y: a threshold or a floor on a plot.
Series flat_line(std::string title, double x0, double x1, double y);
// A line through (x[i], mean of values(i)), with the std of values(i) as its error bar.
Series stat_line(std::string title, const std::vector<double>& x, const std::function<std::vector<double>(std::size_t)>& values);
// The training losses of some runs (one list per run), averaged over windows of `window` steps and over
// the runs: the window [start, start + window) is the point x = start + window. The curve ends at the
// first window in which a run's loss was NaN/Inf or missing (the run stopped there).
Series loss_curve(const std::vector<const std::vector<double>*>& losses, std::size_t steps, std::size_t window,
                  std::string title);

struct Plot {
  std::string title, xlabel, ylabel;
  bool log_x = false, log_y = false;
  std::vector<Series> series;
};

// For a log-scale plot: removes the series that are empty or have a value that is not > 0 (gnuplot
// cannot place it) and returns their titles, ", "-separated; with `say_why` each is followed by
// " (exactly 0)" or " (not all > 0)".
std::string drop_nonpositive(std::vector<Series>& series, bool say_why = false);

// `plot` without the series of which no point can be drawn (none finite, or none > 0 on a log axis);
// `note` gets "'title': every value is 0" for each, "; "-separated.
Plot without_degenerate_series(Plot plot, std::string& note);

// Writes DIR/NAME.dat (the data, one block per series) and DIR/NAME.gp (the gnuplot script), then
// runs gnuplot to draw DIR/NAME.png and DIR/NAME.svg. Throws gs::Error if gnuplot fails. A series of
// which no point can be drawn is left out, named in a "note:" line on stderr; with none left, nothing
// is drawn (and the note says so).
void draw(const Plot& plot, const std::filesystem::path& dir, const std::string& name);

// A label as part of a file name: a placement triple "post/layer/admin" becomes "post-layer-admin"
// (draw() refuses a name with a '/': it would name a folder that does not exist).
std::string file_part(std::string label);

}  // namespace gs::experiments
