// explorer: trains Post-LN and Pre-LN, with and without warmup, and writes the explorer page of the
// runs (docs/explorer.md). Until every binary takes --html, this is how a page is made.
//
//   build/bin/explorer                                 4 runs (post/pre x warmup 0/100), 300 steps
//   build/bin/explorer --out a.html --runs post:0 --steps 100
//   build/bin/explorer --out both.html --add a.html --add b.html --steps 0 --runs ""   merge pages only
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "experiments/common/explorer/demo_run.hpp"
#include "experiments/common/explorer/page.hpp"
#include "experiments/common/explorer/recorder.hpp"

using namespace gs::explorer;

int main(int argc, char** argv) {
  CLI::App app{"explorer: train Post-LN and Pre-LN and write the explorer page (docs/explorer.md)"};
  DemoOptions o;
  std::string out = "out/explorer/explorer.html";
  std::vector<std::string> runs = {"post:0", "post:100", "pre:0", "pre:100"};
  std::vector<std::string> add;
  std::string snapshot_steps;
  app.add_option("--out", out, "the page to write (HTML)")->capture_default_str();
  app.add_option("--runs", runs, "PLACEMENT:WARMUP pairs to train (comma-separated; empty: none)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--add", add, "put the runs of this page (one written by explorer or --html) into the page too; "
                               "repeatable");
  app.add_option("--steps", o.steps, "training steps per run")->check(CLI::Range(0, 100000))->capture_default_str();
  app.add_option("--lr", o.lr, "peak learning rate of Adam(0.9, 0.98)")
      ->check(CLI::Range(1e-8, 10.0))
      ->capture_default_str();
  app.add_option("--layers", o.layers, "blocks (the graph view draws up to about 4)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--d-model", o.d_model, "model width")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--heads", o.heads, "attention heads")->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("--d-ff", o.d_ff, "feed-forward width")->check(CLI::Range(1, 16384))->capture_default_str();
  app.add_option("--seed", o.seed, "initialisation, corpus and batch seed")->capture_default_str();
  app.add_option("--snapshot-steps", snapshot_steps,
                 "steps whose whole graph the step scrubber shows: 0,1,2,5 or 0-10 or 0:300:10 "
                 "(default 0,1,2,3,5,8,13,20,30,50,80,130,200,300)");
  app.add_option("--jobs", o.jobs, "runs trained at once")->check(CLI::Range(1, 64))->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    if (!snapshot_steps.empty()) o.recorder.snapshot_steps = parse_steps(snapshot_steps);
    o.runs.clear();
    for (const std::string& r : runs) {
      if (r.empty()) continue;
      const std::size_t colon = r.find(':');
      DemoRun d;
      d.placement = r.substr(0, colon);
      try {
        if (colon == std::string::npos || r.find_first_not_of("0123456789", colon + 1) != std::string::npos ||
            colon + 1 == r.size())
          throw std::invalid_argument("");
        d.warmup = std::stoul(r.substr(colon + 1));
      } catch (const std::exception&) {
        throw gs::Error("--runs: '" + r + "' is not PLACEMENT:WARMUP, e.g. post:0 or pre:100");
      }
      o.runs.push_back(d);
    }
    if (o.runs.empty() && add.empty()) throw gs::Error("--runs is empty and no --add page: nothing to write");
    Page page = o.runs.empty() ? Page{} : demo_page(o);
    for (const std::string& file : add) {
      Page other = read_explorer_page(file);
      if (page.runs.empty()) page.title = other.title;
      add_runs(page, std::move(other));
    }
    write_explorer_page(out, page);
    std::printf("explorer: wrote %s (%zu runs); open it in a browser: file://%s\n", out.c_str(), page.runs.size(),
                std::filesystem::absolute(out).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "explorer: %s\n", e.what());
    return 1;
  }
  return 0;
}
