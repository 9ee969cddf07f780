#include "experiments/common/report.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "engine/error.hpp"
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

// 'text' for a POSIX shell: single quotes, with each ' written as '\''.
std::string shell_quote(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string Table::to_text() const {
  std::vector<std::size_t> width;
  for (const std::string& c : columns_) width.push_back(display_width(c));
  for (const auto& row : rows_)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) out += "  ";
      out += pad(cells[i], width[i]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
  };
  line(columns_);
  std::vector<std::string> rule;
  for (std::size_t w : width) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto& row : rows_) line(row);
  return out;
}

void Table::write_csv(const std::filesystem::path& path) const {
  std::string text;
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) text += ",";
      text += csv_cell(cells[i]);
    }
    text += "\n";
  };
  line(columns_);
  for (const auto& row : rows_) line(row);
  nn::write_file_atomically(path, text);
}

void draw(const Plot& plot, const std::filesystem::path& dir, const std::string& name) {
  std::filesystem::create_directories(dir);
  const std::filesystem::path dat = dir / (name + ".dat"), gp = dir / (name + ".gp");
  // The data: one block per series, blocks separated by two blank lines (gnuplot's "index").
  std::ostringstream data;
  for (const Series& s : plot.series) {
    data << "# " << s.title << "\n";
    for (std::size_t i = 0; i < s.x.size(); ++i)
      data << fmt(s.x[i], 10) << " " << fmt(s.y[i], 10) << " " << fmt(s.err.empty() ? 0.0 : s.err[i], 10) << "\n";
    data << "\n\n";
  }
  nn::write_file_atomically(dat, data.str());

  auto quoted = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\\\"") : std::string(1, c);
    return q + "\"";
  };
  std::ostringstream script;
  script << "# Drawn by gradscope; run `gnuplot " << gp.filename().string() << "` in this folder to redraw.\n"
         << "set title " << quoted(plot.title) << " noenhanced\n"
         << "set xlabel " << quoted(plot.xlabel) << " noenhanced\n"
         << "set ylabel " << quoted(plot.ylabel) << " noenhanced\n"
         << "set key outside right top noenhanced\nset grid\n"
         << (plot.log_x ? "set logscale x\n" : "") << (plot.log_y ? "set logscale y\n" : "");
  std::string plots;
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const Series& s = plot.series[i];
    if (i > 0) plots += ", ";
    plots += quoted(dat.filename().string()) + " index " + std::to_string(i) +
             (s.err.empty() ? " using 1:2 with linespoints" : " using 1:2:3 with yerrorlines") + " title " +
             quoted(s.title);
  }
  // NAME.gp draws NAME.png and NAME.svg (for a person who wants to redraw). The run here uses a copy
  // that draws into temporary files, renamed into place only once both are complete.
  const std::vector<std::pair<std::string, std::string>> outputs = {{"pngcairo size 960,600", ".png"},
                                                                    {"svg size 960,600", ".svg"}};
  auto with_outputs = [&](const std::string& suffix) {
    std::string text = script.str();
    for (const auto& [terminal, ext] : outputs) {
      text += "set terminal " + terminal + "\nset output " + quoted(name + ext + suffix) + "\nplot " + plots;
      text += "\n";
    }
    return text + "set output\n";
  };
  nn::write_file_atomically(gp, with_outputs(""));
  const std::string run = name + ".gp.run", log = name + ".gnuplot.log";
  nn::write_file_atomically(dir / run, with_outputs(".tmp"));

  const std::string command = "cd " + shell_quote(dir.string()) + " && gnuplot " + shell_quote(run) + " 2>" + shell_quote(log);
  const int status = std::system(command.c_str());
  std::filesystem::remove(dir / run);
  if (status != 0) throw Error("draw: gnuplot failed on " + gp.string() + "; see " + (dir / log).string());
  std::filesystem::remove(dir / log);
  for (const auto& [terminal, ext] : outputs)
    std::filesystem::rename(dir / (name + ext + ".tmp"), dir / (name + ext));
}

}  // namespace gs::experiments
