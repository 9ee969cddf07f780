// draw() of plot.hpp: a plot's data and gnuplot script, and gnuplot run on them.
#include <cstdio>
#include <sstream>

#include "engine/error.hpp"
#include "experiments/lib/interrupt.hpp"
#include "experiments/lib/outputs.hpp"
#include "experiments/lib/plot.hpp"
#include "experiments/lib/stats.hpp"
#include "explorer/spawn.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::experiments {

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

// A gnuplot string: between double quotes, each double quote in it escaped.
std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\\\"") : std::string(1, c);
  return q + "\"";
}

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

  // gnuplot runs in its own process group (spawn.hpp): a Ctrl-C at the terminal reaches this process
  // only, which lets the plot finish (a fraction of a second), puts it in place, and stops before the next one.
  const int status = explorer::spawn_and_wait({"gnuplot", run}, dir, {}, log);
  std::filesystem::remove(dir / run);
  if (status == 127) {
    std::filesystem::remove(dir / log);
    throw Error("draw: gnuplot is not on PATH, needed for " + (dir / (name + ".png")).string() +
                " (apt-get install gnuplot; scripts/install-deps)");
  }
  if (status != 0) {
    for (const auto& [terminal, ext] : plot_outputs) std::filesystem::remove(dir / (name + ext + ".tmp"));
    throw Error("draw: gnuplot failed on " + (dir / (name + ".gp")).string() + "; see " + (dir / log).string());
  }
  std::filesystem::remove(dir / log);
  for (const auto& [terminal, ext] : plot_outputs)
    std::filesystem::rename(dir / (name + ext + ".tmp"), dir / (name + ext));
  stop_if_requested_in("drawing", "while drawing the plots, after " + (dir / name).string() + ".png");
}

}  // namespace gs::experiments
