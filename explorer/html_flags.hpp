// --html FILE, --html-add FILE, --snapshot-steps LIST: the explorer's flags, for every binary that
// records runs (docs/explorer.md). This header includes CLI11: include it only where flags are parsed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "explorer/page.hpp"
#include "explorer/recorder.hpp"

namespace gs::explorer {

struct HtmlOptions {
  std::string file;                 // --html: the page to write; "" writes none
  std::vector<std::string> add;     // --html-add: pages whose runs go into it too
  std::string snapshot_steps = "0,1,2,3,5,8,13,20,30,50,80,130,200,300";  // --snapshot-steps
  bool overwrite = false;           // --overwrite: replace a --html file gradscope did not write
  bool wanted() const { return !file.empty(); }
  // The recorder's options with --snapshot-steps parsed (throws gs::Error naming the flag).
  RecorderOptions recorder() const;
};

// Adds --html, --html-add, --snapshot-steps and --overwrite to `app`, writing into `options`.
void add_html_options(CLI::App& app, HtmlOptions& options);

// Before any work: --snapshot-steps parses, --html FILE may be written by `program` (nn::check_output_file:
// absent, or this program's own earlier page, or any file with --overwrite), and every
// --html-add FILE is an explorer page. Throws gs::Error naming the flag.
void check_html(const HtmlOptions& options, std::string_view program);

// Reads every --html-add page (an error names the file), puts its runs after page's, checks --html FILE
// again (check_html), writes the page atomically with `program`'s signature and prints
// "explorer page: FILE (N runs)".
void write_html(const HtmlOptions& options, Page page, std::string_view program = {});

}  // namespace gs::explorer
