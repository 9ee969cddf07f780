// explorer: trains Post-LN and Pre-LN in the lesson's setting (6 layers, d 32, vocab 16 order-2 Markov
// corpus, Adam lr 1e-2; docs/why-pre-ln.md) and writes the explorer page of the runs (docs/explorer.md),
// each judged against the frozen-blocks baseline of its placement, which it trains too. Until every
// binary takes --html, this is how a page is made.
//
//   build/bin/explorer                                 4 runs (post and pre without warmup, post with warmup 100,
//                                                      post with ln-undo-gain) and 2 frozen-blocks baselines, 300 steps each
//   build/bin/explorer --html a.html --runs post:0 --steps 100
//   build/bin/explorer --html both.html --html-add a.html --html-add b.html --runs ""   merge pages only
//
// The flags go through the shared table (experiments/lib/flags.cpp) and Experiment::main: the same
// ranges as every binary, the one-line "explorer: error: ..." format, SIGINT and SIGTERM between steps.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "experiments/demo_run.hpp"
#include "explorer/html_flags.hpp"
#include "explorer/page.hpp"
#include "explorer/recorder.hpp"
#include "experiments/lib/harness.hpp"
#include "experiments/lib/interrupt.hpp"
#include "experiments/lib/memory.hpp"
#include "experiments/lib/outputs.hpp"
#include "nn/config.hpp"
#include "nn/interventions.hpp"

using namespace gs::explorer;
using gs::experiments::add_flag;
using gs::experiments::RealRange;
using gs::experiments::Whole;

namespace {

// --runs PLACEMENT:WARMUP[:CHANGE],...: the runs to train; a malformed or refused one is a FlagError.
std::vector<DemoRun> parse_runs(const std::vector<std::string>& runs) {
  std::vector<DemoRun> parsed;
  for (const std::string& r : runs) {
    if (r.empty()) continue;
    const std::size_t colon = r.find(':'), second = colon == std::string::npos ? colon : r.find(':', colon + 1);
    DemoRun d;
    d.placement = r.substr(0, colon);
    const std::string warmup = colon == std::string::npos ? "" : r.substr(colon + 1, second - colon - 1);
    if (warmup.empty() || warmup.find_first_not_of("0123456789") != std::string::npos || warmup.size() > 9 ||
        (second != std::string::npos && second + 1 == r.size()))
      throw gs::experiments::FlagError("--runs: '" + r + "' is not PLACEMENT:WARMUP[:CHANGE], e.g. post:0, pre:100 or post:0:radam");
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
      throw gs::experiments::FlagError("--runs " + r + ": " + e.what());
    }
    for (const DemoRun& earlier : parsed)
      if (earlier.placement == d.placement && earlier.warmup == d.warmup && earlier.change == d.change)
        throw gs::experiments::FlagError("--runs: '" + r + "' is given twice (the page would show one run twice)");
    parsed.push_back(d);
  }
  return parsed;
}

// Refuses runs that cannot fit in memory, --jobs of them at once.
void check_memory(const DemoOptions& o) {
  const gs::nn::ModelConfig& c = o.model;
  const std::size_t at_once = std::max<std::size_t>(1, std::min<std::size_t>(o.jobs, o.runs.size()));
  gs::experiments::check_fits(gs::experiments::footprint(c, o.batch, 2, true), at_once, 0.0,
                              "--layers " + std::to_string(c.layers) + " --d-model " + std::to_string(c.d_model) +
                                  " --d-ff " + std::to_string(c.ff()) + " --jobs " + std::to_string(o.jobs));
}

}  // namespace

int main(int argc, char** argv) {
  gs::experiments::Experiment ex("explorer", "explorer: train Post-LN and Pre-LN and write the explorer page "
                                             "(docs/explorer.md)");
  CLI::App& app = ex.app;
  DemoOptions o;
  HtmlOptions html;
  html.file = "out/explorer/explorer.html";
  std::vector<std::string> runs = {"post:0", "pre:0", "post:100", "post:0:ln-undo-gain"};
  add_html_options(app, html);
  add_flag(app, "--runs", runs,
           "PLACEMENT:WARMUP[:CHANGE] runs to train (comma-separated; empty: none); CHANGE: radam, or an "
           "intervention of `causes` in every block (ln-undo-gain, ln-detach-stats, detach-skip, detach-branch, freeze-ln)");
  add_flag(app, "--steps", o.steps, "training steps per run", Whole{0, Whole::no_max, "0: the pass at initialization only"});
  add_flag(app, "--lr", o.lr, "peak learning rate of Adam(0.9, 0.98)", RealRange::above(0));
  add_flag(app, "--layers", o.model.layers, "blocks (above about 6 the graph has too many entries to draw)", Whole{1});
  add_flag(app, "--d-model", o.model.d_model, "model width", Whole{1});
  add_flag(app, "--heads", o.model.heads, "attention heads (must divide --d-model)", Whole{1});
  add_flag(app, "--d-ff", o.model.d_ff, "feed-forward width", Whole{0, Whole::no_max, "0: 4 x --d-model"});
  add_flag(app, "--margin", o.margin, "verdict margin in nats: a run beats frozen blocks below their loss minus this "
           "(as causes' \"beat frozen\")", RealRange::above(0));
  add_flag(app, "--seed", o.model.seed, "initialisation, corpus and batch seed", Whole{0});
  add_flag(app, "--jobs", o.jobs, "runs trained at once", Whole{1, gs::experiments::max_jobs()});

  return ex.main(argc, argv, [&] {
    if (html.file.empty()) throw gs::experiments::FlagError("--html: the page needs a file name");
    if (o.model.d_model % o.model.heads != 0)
      throw gs::experiments::FlagError("--heads " + std::to_string(o.model.heads) + " does not divide --d-model " +
                                       std::to_string(o.model.d_model));
    o.recorder = html.recorder();
    o.runs = parse_runs(runs);
    if (o.runs.empty() && html.add.empty())
      throw gs::experiments::FlagError("--runs is empty and no --html-add page: nothing to write");
    if (!o.runs.empty()) check_memory(o);  // the largest of the runs trained at once, before anything is allocated
    check_html(html, "explorer");
    gs::experiments::lock_output(html.file, "--html", "explorer");  // a second run on the same page is refused
    Page page;
    try {
      if (!o.runs.empty()) page = demo_page(o);
    } catch (const gs::experiments::Interrupted& e) {
      if (!e.detail.empty()) throw;
      throw gs::experiments::Interrupted(e.signal, e.step, " of a run; no page written");
    }
    gs::experiments::stop_if_requested_in("writing", "before writing the page; no page written");
    write_html(html, std::move(page), "explorer");
  });
}
