// The explorer page: one self-contained HTML file (no server, no network) that shows one or more
// training runs: the graph of one forward and backward pass laid out by Graphviz, with every edge
// coloured by the gradient norm that flowed along it at each recorded step, a panel per node, and
// charts of named per-step series, two runs side by side (docs/explorer.md).
//
// The page embeds its data as JSON in <script type="application/json" id="gradscope-data">, so a page
// can be read back and its runs put into another page (read_explorer_page, add_runs).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "explorer/tape_view.hpp"

namespace gs::explorer {

// A chart over steps: what its series measure, said once.
struct Chart {
  std::string id;           // "loss", "grad_norm", ... (series name their chart by it)
  std::string title;        // "training loss"
  std::string description;  // one sentence: what the quantity is
  std::string y_label;
  bool log_y = false;
};

// One named per-step series of a chart: values[i] at steps[i].
struct StepSeries {
  std::string chart;  // Chart::id
  std::string name;   // "blocks.0", "blocks.0.ln1", ...: the same name in two runs is the same quantity
  std::vector<std::size_t> steps;
  std::vector<double> values;
};

// The graph of a run: its structure, the SVG that Graphviz laid it out as, and the numbers of each
// recorded step.
struct GraphData {
  GraphView view;
  std::string svg;                   // `dot -Tsvg` of to_dot(tape, {svg_ids = true, legend = false})
  std::vector<Snapshot> snapshots;   // in step order
};

struct Run {
  std::string name;                                        // "post, warmup 0"
  std::vector<std::pair<std::string, std::string>> facts;  // what the run was: ("placement", "post"), ...
  std::optional<GraphData> graph;
  std::string graph_note;  // why there is no graph (too large, no dot), or "" when there is one
  std::vector<Chart> charts;
  std::vector<StepSeries> series;

  // The series `name` of chart `chart`, created (after the others) if new.
  StepSeries& series_of(const std::string& chart, const std::string& name);
  // Appends (step, value) to that series; the chart must have been declared with declare_chart.
  void add_point(const std::string& chart, const std::string& name, std::size_t step, double value);
  void declare_chart(Chart chart);  // once per id; a second one with the same id is ignored
};

struct Page {
  std::string title = "gradscope explorer";
  std::vector<Run> runs;
};

// Puts other's runs after page's; a run whose name is taken gets " (2)", " (3)", ... appended.
void add_runs(Page& page, Page other);

// The page as HTML text, and written to `file` atomically (parent folders created). Throws gs::Error
// naming the file if it cannot be written. Its second line carries output_signature(program) (the
// running program's name if empty), which check_output_file (nn/io/directory_write.hpp) looks for before
// replacing the file; write_explorer_page does not check: callers do, before their work (check_html).
std::string page_html(const Page& page, std::string_view program = {});
void write_explorer_page(const std::filesystem::path& file, const Page& page, std::string_view program = {});

// The data of a page that write_explorer_page wrote. Throws gs::Error naming the file if it is not
// one (no data block, bad JSON, another format version).
Page read_explorer_page(const std::filesystem::path& file);

// The data as JSON text, and back (what the page embeds; page_json.cpp).
std::string page_json(const Page& page);
Page parse_page_json(const std::string& text, const std::string& what);

}  // namespace gs::explorer
