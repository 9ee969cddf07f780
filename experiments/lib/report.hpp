// What every experiment reports: statistics over seeds, an aligned table for the terminal (also
// written as CSV), line plots drawn by gnuplot into PNG and SVG, and a CSV file written as it grows.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
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

// The --out directory of a grid while its files are written (Experiment::main calls these). The first
// file this process writes inside `dir` (a table, a plot, a CSV) first puts INCOMPLETE into it, which
// output_complete() removes once every file is written: an interrupted or failed run leaves the folder
// as it was (nothing written yet) or marked. output_complete returns whether the marker had been written.
inline constexpr const char* incomplete_marker = "INCOMPLETE";
void watch_output(const std::filesystem::path& dir, const std::string& program);
void mark_writing(const std::filesystem::path& path);
bool output_complete();
bool output_marked_incomplete();

// Runs argv (looked up in PATH) in `dir`, in a process group of its own (a terminal's Ctrl-C does not
// reach it), its stderr into the file `stderr_file` (relative to dir); returns its exit status
// (128 + the signal if one ended it).
int run_in_own_group(const std::filesystem::path& dir, const std::vector<std::string>& argv,
                     const std::string& stderr_file);

// A label as part of a file name: a placement triple "post/layer/admin" becomes "post-layer-admin"
// (draw() refuses a name with a '/': it would name a folder that does not exist).
std::string file_part(std::string label);

// 'text' for a POSIX shell: single quotes, each ' written as '\''.
std::string shell_quote(const std::string& text);

// A CSV file with a header row. Rows are kept in memory and the whole file is rewritten atomically
// (temporary file, then rename) by flush(), which row() also calls when a second has passed since the
// last write; so the file on disk is always complete. Numbers are written with 10 significant digits.
class CsvWriter {
 public:
  CsvWriter(std::filesystem::path path, std::vector<std::string> columns);
  ~CsvWriter();  // flushes (errors then are only printed)
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  void row(const std::vector<double>& values);
  void flush();
  // For a resumed run: keeps the rows of the file already at `path` (if its header is the same) whose
  // first value is at most `last`, e.g. the steps up to the checkpoint.
  void keep_existing_rows(double last);

 private:
  std::filesystem::path path_;
  std::size_t columns_;
  std::string text_;
  bool dirty_ = true;
  std::chrono::steady_clock::time_point last_flush_;
};

}  // namespace gs::experiments
