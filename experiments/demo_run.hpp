// A real page now: trains TransformerLMs on the Markov corpus (experiments/lib/training.hpp) and
// records each run for the explorer. What `build/bin/explorer` runs; the experiment binaries record
// their own runs with RunRecorder once they take --html.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "explorer/page.hpp"
#include "explorer/recorder.hpp"
#include "nn/config.hpp"

namespace gs::explorer {

struct DemoRun {
  std::string placement = "post";
  std::size_t warmup = 0;
  // "" (Adam), "radam" (RAdam with the same betas), or a backward-pass intervention of
  // nn/interventions.hpp ("ln-undo-gain", ...) in every block: the rows of `causes` (docs/pre-vs-post-ln.md, 8).
  std::string change;
  std::string name() const;  // "post, warmup 0" or "post, warmup 0, ln-undo-gain"
};

struct DemoOptions {
  // The model (each run sets its placement): the lesson's, causes' and dynamics' default (6 layers,
  // vocab 16, d 32, 2 heads, d_ff 128, batch 16 x seq 16; docs/why-pre-ln.md), where Post-LN without
  // warmup gets stuck at lr 1e-2 while Pre-LN trains. Its seed is the corpus's and the batches' too;
  // its context is the seq.
  nn::ModelConfig model = [] {
    nn::ModelConfig c;
    c.vocab = 16, c.context = 16, c.d_model = 32, c.heads = 2, c.layers = 6, c.d_ff = 128;
    return c;
  }();
  std::size_t batch = 16;
  double lr = 1e-2;
  std::size_t steps = 300;  // updates; the pass after the last one is recorded too (step == steps)
  std::size_t eval_batches = 20;
  // The verdict's margin in nats: a run beats frozen blocks when its held-out loss is below that of the
  // frozen-blocks run of its placement minus this (causes' --margin and "beat frozen").
  double margin = 0.05;
  std::vector<DemoRun> runs = {{"post", 0, ""}, {"pre", 0, ""}, {"post", 100, ""}, {"post", 0, "ln-undo-gain"}};  // explorer's
  RecorderOptions recorder;
  unsigned jobs = 2;
};

// Trains every run, then, for each placement among them, its frozen-blocks baseline (the same model,
// seed, batches and constant lr with every block and ln_f held at init, not shown as a run), each on
// `jobs` threads, and returns the page: each run's facts end with its verdict against that baseline.
// Prints one line per run, its verdict.
Page demo_page(const DemoOptions& options);

}  // namespace gs::explorer
