#include "explorer/html_flags.hpp"

#include <cstdio>
#include <filesystem>

#include "engine/error.hpp"
#include "nn/io/directory_write.hpp"

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
  app.add_flag("--overwrite", o.overwrite, "replace an existing --html file that gradscope did not write");
}

void check_html(const HtmlOptions& o, std::string_view program) {
  if (!o.wanted()) {
    if (!o.add.empty()) throw Error("--html-add puts runs into the --html page: give --html FILE too");
    return;
  }
  (void)o.recorder();  // --snapshot-steps parses
  nn::check_output_file(o.file, "--html", program.empty() ? nn::this_program() : std::string(program), o.overwrite);
  for (const std::string& file : o.add) {
    if (std::filesystem::weakly_canonical(file) == std::filesystem::weakly_canonical(o.file)) continue;
    try {
      (void)read_explorer_page(file);
    } catch (const std::exception& e) {
      throw Error("--html-add " + file + ": " + e.what());
    }
  }
}

void write_html(const HtmlOptions& o, Page page, std::string_view program) {
  const std::string name = program.empty() ? nn::this_program() : std::string(program);
  for (const std::string& file : o.add) {
    Page other = read_explorer_page(file);
    if (page.runs.empty()) page.title = other.title;
    add_runs(page, std::move(other));
  }
  nn::check_output_file(o.file, "--html", name, o.overwrite);  // again: the file may have appeared during the run
  write_explorer_page(o.file, page, name);
  std::printf("explorer page: %s (%zu run%s); open file://%s in a browser\n", o.file.c_str(), page.runs.size(),
              page.runs.size() == 1 ? "" : "s", std::filesystem::absolute(o.file).c_str());
}

}  // namespace gs::explorer
