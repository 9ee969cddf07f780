#include "experiments/lib/report.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "engine/error.hpp"
#include "experiments/lib/interrupt.hpp"
#include "nn/io/atomic_file.hpp"

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

Table::Table(std::vector<std::string> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size())
    throw Error("Table: a row has " + std::to_string(cells.size()) + " cells for " +
                std::to_string(columns_.size()) + " columns");
  rows_.push_back(std::move(cells));
}

namespace {

// The width of a cell as a terminal shows it: UTF-8 continuation bytes take no column.
std::size_t display_width(const std::string& s) {
  std::size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

std::string pad(const std::string& s, std::size_t width) { return s + std::string(width - display_width(s), ' '); }

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string file_part(std::string label) {
  for (char& c : label)
    if (c == '/') c = '-';
  return label;
}

namespace {

// `text` between two `mark`s, each mark inside it written as `escaped`.
std::string between(const std::string& text, char mark, const std::string& escaped) {
  std::string q(1, mark);
  for (char c : text) q += c == mark ? escaped : std::string(1, c);
  return q + mark;
}

}  // namespace

std::string shell_quote(const std::string& text) { return between(text, '\'', "'\\''"); }

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

// The cells as `show(column, cell)` writes each, joined by `sep`.
std::string joined(const std::vector<std::string>& cells, const char* sep,
                   const std::function<std::string(std::size_t, const std::string&)>& show) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) line += (i > 0 ? sep : "") + show(i, cells[i]);
  return line;
}

}  // namespace

std::string Table::to_text() const {
  std::vector<std::size_t> width;
  for (const std::string& c : columns_) width.push_back(display_width(c));
  for (const auto& row : rows_)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l = joined(cells, "  ", [&](std::size_t i, const std::string& c) { return pad(c, width[i]); });
    out += l.erase(l.find_last_not_of(' ') + 1) + "\n";  // no trailing spaces
  };
  line(columns_);
  std::vector<std::string> rule;
  for (std::size_t w : width) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto& row : rows_) line(row);
  return out;
}

void Table::write_csv(const std::filesystem::path& path) const {
  const auto cell = [](std::size_t, const std::string& c) { return csv_cell(c); };
  std::string text = joined(columns_, ",", cell) + "\n";
  for (const auto& row : rows_) text += joined(row, ",", cell) + "\n";
  mark_writing(path);
  nn::write_file_atomically(path, text);
}

namespace {

// The data of a plot: one block per series, blocks separated by two blank lines (gnuplot's "index").
std::string plot_data(const Plot& plot) {
  std::ostringstream data;
  for (const Series& s : plot.series) {
    data << "# " << s.title << "\n";
    for (std::size_t i = 0; i < s.x.size(); ++i)
      data << fmt(s.x[i], 10) << " " << fmt(s.y[i], 10) << " " << fmt(s.err.empty() ? 0.0 : s.err[i], 10) << "\n";
    data << "\n\n";
  }
  return data.str();
}

std::string quoted(const std::string& s) { return between(s, '"', "\\\""); }

// What draw() makes of NAME: a gnuplot terminal and the file's extension.
const std::vector<std::pair<std::string, std::string>> plot_outputs = {{"pngcairo size 960,600", ".png"},
                                                                       {"svg size 960,600", ".svg"}};

// The gnuplot script NAME.gp: it draws NAME.dat into NAME.png and NAME.svg, each file name followed by
// `suffix` (the run here draws into temporary files, renamed into place only once both are complete).
std::string plot_script(const Plot& plot, const std::string& name, const std::string& suffix) {
  std::ostringstream script;
  script << "# Drawn by gradscope; run `gnuplot " << name << ".gp` in this folder to redraw.\n"
         << "set title " << quoted(plot.title) << " noenhanced\n"
         << "set xlabel " << quoted(plot.xlabel) << " noenhanced\n"
         << "set ylabel " << quoted(plot.ylabel) << " noenhanced\n"
         << "set key outside right top noenhanced\nset grid\n"
         << (plot.log_x ? "set logscale x\n" : "") << (plot.log_y ? "set logscale y\n" : "");
  std::string plots;
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const Series& s = plot.series[i];
    if (i > 0) plots += ", ";
    plots += quoted(name + ".dat") + " index " + std::to_string(i) +
             (s.err.empty() ? " using 1:2 with linespoints" : " using 1:2:3 with yerrorlines") + " title " +
             quoted(s.title);
  }
  std::string text = script.str();
  for (const auto& [terminal, ext] : plot_outputs)
    text += "set terminal " + terminal + "\nset output " + quoted(name + ext + suffix) + "\nplot " + plots + "\n";
  return text + "set output\n";
}

}  // namespace

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

void draw(const Plot& given, const std::filesystem::path& dir, const std::string& name) {
  if (name.find('/') != std::string::npos)
    throw Error("draw: the plot name '" + name + "' has a '/' (pass a label through file_part)");
  // A measure that is degenerate in every point (an update ratio of 0 at lr 1e-320, a NaN run) is left
  // out and named, so that the rest is drawn; a plot with nothing left is not drawn at all.
  std::string note;
  const Plot plot = without_degenerate_series(given, note);
  if (!note.empty())
    std::fprintf(stderr, "note: %s: %s %s\n", (dir / (name + ".png")).string().c_str(),
                 plot.series.empty() ? "not drawn, nothing to draw:" : "drawn without", note.c_str());
  if (plot.series.empty()) return;
  stop_if_requested_in("drawing", "before drawing " + (dir / name).string());
  mark_writing(dir / name);
  std::filesystem::create_directories(dir);
  nn::write_file_atomically(dir / (name + ".dat"), plot_data(plot));
  nn::write_file_atomically(dir / (name + ".gp"), plot_script(plot, name, ""));
  const std::string run = name + ".gp.run", log = name + ".gnuplot.log";
  nn::write_file_atomically(dir / run, plot_script(plot, name, ".tmp"));

  // gnuplot runs in its own process group: a Ctrl-C at the terminal reaches this process only, which
  // lets the plot finish (a fraction of a second), puts it in place, and stops before the next one.
  const int status = run_in_own_group(dir, {"gnuplot", run}, log);
  std::filesystem::remove(dir / run);
  if (status != 0) {
    for (const auto& [terminal, ext] : plot_outputs) std::filesystem::remove(dir / (name + ext + ".tmp"));
    throw Error("draw: gnuplot failed on " + (dir / (name + ".gp")).string() + "; see " + (dir / log).string());
  }
  std::filesystem::remove(dir / log);
  for (const auto& [terminal, ext] : plot_outputs)
    std::filesystem::rename(dir / (name + ext + ".tmp"), dir / (name + ext));
  stop_if_requested_in("drawing", "while drawing the plots, after " + (dir / name).string() + ".png");
}

// ---- the --out directory of a grid while its files are written ----

namespace {
std::mutex watched_mutex;
std::filesystem::path watched_dir;  // "" when no directory is watched
std::string watched_program;
bool marked = false;
}  // namespace

void watch_output(const std::filesystem::path& dir, const std::string& program) {
  std::lock_guard<std::mutex> lock(watched_mutex);
  watched_dir = std::filesystem::absolute(dir).lexically_normal();
  watched_program = program;
  marked = false;
}

void mark_writing(const std::filesystem::path& path) {
  std::lock_guard<std::mutex> lock(watched_mutex);
  if (watched_dir.empty() || marked) return;
  const std::filesystem::path p = std::filesystem::absolute(path).lexically_normal();
  const auto [end, rest] = std::mismatch(watched_dir.begin(), watched_dir.end(), p.begin(), p.end());
  if (end != watched_dir.end()) return;  // not inside the watched directory
  nn::write_file_atomically(watched_dir / incomplete_marker,
                            "gradscope " + watched_program + " was writing the files of this folder when it stopped "
                            "(a signal or an error): some may be from this run and some from an earlier one, some "
                            "missing. Run it again to complete them; a run that completes removes this file.\n");
  marked = true;
}

bool output_complete() {
  std::lock_guard<std::mutex> lock(watched_mutex);
  if (!watched_dir.empty()) std::filesystem::remove(watched_dir / incomplete_marker);
  const bool was = marked;
  watched_dir.clear();
  marked = false;
  return was;
}

bool output_marked_incomplete() {
  std::lock_guard<std::mutex> lock(watched_mutex);
  return marked;
}

int run_in_own_group(const std::filesystem::path& dir, const std::vector<std::string>& argv,
                     const std::string& stderr_file) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string where = dir.string(), log = stderr_file;
  const pid_t child = ::fork();
  if (child < 0) throw Error("draw: cannot start " + argv.front() + ": " + std::strerror(errno));
  if (child == 0) {  // only async-signal-safe calls from here to exec
    ::setpgid(0, 0);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    if (::chdir(where.c_str()) != 0) ::_exit(126);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) ::dup2(fd, 2);
    ::execvp(args[0], args.data());
    static const char cannot[] = "cannot run the program (is it installed? scripts/install-deps)\n";
    if (::write(2, cannot, sizeof cannot - 1) < 0) ::_exit(127);  // into the log the error names
    ::_exit(127);
  }
  ::setpgid(child, child);  // also here: whichever runs first, the child is in its group before it draws
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR) throw Error("draw: waiting for " + argv.front() + ": " + std::strerror(errno));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// ---- CsvWriter ----

CsvWriter::CsvWriter(std::filesystem::path path, std::vector<std::string> columns)
    : path_(std::move(path)), columns_(columns.size()), last_flush_(std::chrono::steady_clock::now()) {
  for (std::size_t i = 0; i < columns.size(); ++i) text_ += (i ? "," : "") + columns[i];
  text_ += '\n';
  if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path());
}

CsvWriter::~CsvWriter() {
  try {
    flush();
  } catch (const std::exception& e) {
    std::cerr << "warning: " << e.what() << "\n";
  }
}

void CsvWriter::row(const std::vector<double>& values) {
  if (values.size() != columns_)
    throw Error("csv " + path_.string() + ": a row of " + std::to_string(values.size()) + " values for " +
                std::to_string(columns_) + " columns");
  char buf[32];
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.10g", values[i]);
    if (i) text_ += ',';
    text_ += buf;
  }
  text_ += '\n';
  dirty_ = true;
  if (std::chrono::steady_clock::now() - last_flush_ > std::chrono::seconds(1)) flush();
}

void CsvWriter::keep_existing_rows(double last) {
  if (!std::filesystem::exists(path_)) return;
  std::istringstream old(nn::read_file(path_));
  std::string line, header = text_.substr(0, text_.find('\n'));
  if (!std::getline(old, line) || line != header) return;
  while (std::getline(old, line))
    if (!line.empty() && std::strtod(line.c_str(), nullptr) <= last) text_ += line + '\n';
  dirty_ = true;
}

void CsvWriter::flush() {
  if (!dirty_) return;
  mark_writing(path_);
  nn::write_file_atomically(path_, text_);
  dirty_ = false;
  last_flush_ = std::chrono::steady_clock::now();
}

}  // namespace gs::experiments
