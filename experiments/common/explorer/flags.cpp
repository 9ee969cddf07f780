#include "experiments/common/explorer/flags.hpp"

#include <cstdio>
#include <filesystem>

namespace gs::explorer {

RecorderOptions HtmlOptions::recorder() const {
  RecorderOptions r;
  r.snapshot_steps = parse_steps(snapshot_steps, "--snapshot-steps");
  return r;
}

void add_html_options(CLI::App& app, HtmlOptions& o) {
  app.add_option("--html", o.file,
                 "write the explorer page of the run(s) to this HTML file: the graph of a forward and backward pass "
                 "with every edge's gradient norm at the --snapshot-steps, and charts over the steps (docs/explorer.md)")
      ->capture_default_str();
  app.add_option("--html-add", o.add, "put the runs of this explorer page into the --html page too (repeatable)")
      ->capture_default_str();
  app.add_option("--snapshot-steps", o.snapshot_steps,
                 "the steps whose whole graph the page's step scrubber shows: 0,1,2,5 or 0-10 or 0:300:10")
      ->capture_default_str();
}

void write_html(const HtmlOptions& o, Page page) {
  for (const std::string& file : o.add) {
    Page other = read_explorer_page(file);
    if (page.runs.empty()) page.title = other.title;
    add_runs(page, std::move(other));
  }
  write_explorer_page(o.file, page);
  std::printf("explorer page: %s (%zu runs); open file://%s in a browser\n", o.file.c_str(), page.runs.size(),
              std::filesystem::absolute(o.file).c_str());
}

}  // namespace gs::explorer
