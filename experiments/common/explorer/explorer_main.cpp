// explorer: trains Post-LN and Pre-LN, with and without warmup, and writes the explorer page of the
// runs (docs/explorer.md). Until every binary takes --html, this is how a page is made.
//
//   build/bin/explorer                                 5 runs (post/pre x warmup 0/100, post with ln-undo-gain), 300 steps each
//   build/bin/explorer --html a.html --runs post:0 --steps 100
//   build/bin/explorer --html both.html --html-add a.html --html-add b.html --runs ""   merge pages only
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "experiments/common/explorer/demo_run.hpp"
#include "experiments/common/explorer/flags.hpp"
#include "experiments/common/explorer/page.hpp"
#include "experiments/common/explorer/recorder.hpp"
#include "nn/config.hpp"
#include "nn/interventions.hpp"

using namespace gs::explorer;

int main(int argc, char** argv) {
  CLI::App app{"explorer: train Post-LN and Pre-LN and write the explorer page (docs/explorer.md)"};
  DemoOptions o;
  HtmlOptions html;
  html.file = "out/explorer/explorer.html";
  std::vector<std::string> runs = {"post:0", "post:100", "pre:0", "pre:100", "post:0:ln-undo-gain"};
  add_html_options(app, html);
  app.add_option("--runs", runs,
                 "PLACEMENT:WARMUP[:CHANGE] runs to train (comma-separated; empty: none); CHANGE: radam, or an "
                 "intervention of `causes` in every block (ln-undo-gain, ln-detach-stats, detach-skip, detach-branch, freeze-ln)")
      ->delimiter(',')
      ->capture_default_str();
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
  app.add_option("--jobs", o.jobs, "runs trained at once")->check(CLI::Range(1, 64))->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    if (html.file.empty()) throw gs::Error("--html: the page needs a file name");
    o.recorder = html.recorder();
    o.runs.clear();
    for (const std::string& r : runs) {
      if (r.empty()) continue;
      const std::size_t colon = r.find(':'), second = colon == std::string::npos ? colon : r.find(':', colon + 1);
      DemoRun d;
      d.placement = r.substr(0, colon);
      const std::string warmup = colon == std::string::npos ? "" : r.substr(colon + 1, second - colon - 1);
      if (warmup.empty() || warmup.find_first_not_of("0123456789") != std::string::npos || warmup.size() > 9 ||
          (second != std::string::npos && second + 1 == r.size()))
        throw gs::Error("--runs: '" + r + "' is not PLACEMENT:WARMUP[:CHANGE], e.g. post:0, pre:100 or post:0:radam");
      d.warmup = std::stoul(warmup);
      if (second != std::string::npos) d.change = r.substr(second + 1);
      try {
        gs::nn::parse_placement(d.placement);
        if (!d.change.empty() && d.change != "radam") {
          gs::nn::ModelConfig config;
          config.placement = gs::nn::parse_placement(d.placement);
          const std::string why = gs::nn::refusal(gs::nn::parse_interventions(d.change), config);
          if (!why.empty()) throw gs::Error(why);
        }
      } catch (const gs::Error& e) {
        throw gs::Error("--runs " + r + ": " + e.what());
      }
      o.runs.push_back(d);
    }
    if (o.runs.empty() && html.add.empty()) throw gs::Error("--runs is empty and no --html-add page: nothing to write");
    check_html(html, "explorer");
    write_html(html, o.runs.empty() ? Page{} : demo_page(o), "explorer");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "explorer: %s\n", e.what());
    return 1;
  }
  return 0;
}
