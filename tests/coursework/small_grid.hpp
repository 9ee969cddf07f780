// What the checks of module 4 (ex12, ex13) run: a small version of the warmup grid (docs/pre-vs-post-ln.md
// section 4), trained with the library functions the experiments use (nn/train.hpp, experiments/lib/training.hpp),
// small enough that a run takes a fraction of a second. One run here is the run of
//   build/bin/warmup --datasets markov --placements P --warmups W --lrs LR --seed S --layers 3 --d-model 16
//                    --batch 8 --seq 16 --steps 150 --eval-batches 5
// (the same corpus, model, batches, optimizer and verdict), so a student can watch it there.
#pragma once

#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/array.hpp"
#include "engine/error.hpp"
#include "engine/parameter.hpp"
#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "experiments/lib/flags.hpp"
#include "experiments/lib/training.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::experiments {
void setup_process();  // experiments/lib/harness.hpp (which would bring CLI11 into every check)
}  // namespace gs::experiments

namespace gs::coursework {

inline constexpr std::size_t kSmallSteps = 150, kSmallEvalBatches = 5;

// The model of the small grid: vocab 16, 3 layers, d 16, 2 heads, batches of 8 x 16.
inline experiments::ModelOptions small_model(const std::string& placement, unsigned seed) {
  experiments::ModelOptions m = experiments::stability_model();
  m.layers = 3;
  m.d_model = 16;
  m.batch = 8;
  m.placement = placement;
  m.seed = seed;
  return m;
}

// The Markov corpus of the warmup grid (vocab 16, order 2, concentration 0.05, seed 0).
inline const nn::Corpus& small_corpus() {
  static const nn::Corpus corpus = nn::build_corpus({}, 16, 0, 16);
  return corpus;
}

struct SmallRun {
  double final_loss = 0.0;   // held out, after the last step
  experiments::Verdict verdict = experiments::Verdict::trained;
  double ln_input_rms = 0.0; // Post-LN: the RMS of what enters the blocks' LNs (x + F(x)), mean over them, at the end
};

// One run of warmup's grid cell: Adam(0.9, 0.98, eps 1e-8), linear warmup over `warmup` steps then
// constant, no clipping. `before_backward`, if given, is called on the tape after each step's forward
// pass and before its backward pass (an intervention on the backward pass).
inline SmallRun small_run(const std::string& placement, double lr, std::size_t warmup, unsigned seed,
                          const std::function<void(Tape&)>& before_backward = {}) {
  experiments::setup_process();  // as every experiment binary: OpenBLAS on one thread (faster at these sizes)
  const nn::Corpus& corpus = small_corpus();
  experiments::ModelOptions m = small_model(placement, seed);
  m.vocab = corpus.data.vocab();
  nn::TransformerLM model(m.config());
  const experiments::OptimizerSetup opt;
  const std::unique_ptr<nn::Optimizer> optimizer = opt.make(model);
  const nn::Schedule schedule = opt.with_hold({nn::ScheduleKind::warmup, lr, warmup, kSmallSteps, 0.1});
  const nn::StepSetup setup{&corpus.data, m.batch, m.seq, m.seed, schedule, 0.0, {}};
  for (std::size_t step = 0; step < kSmallSteps; ++step) {
    if (!before_backward) {
      nn::train_step(model, *optimizer, setup, step);  // what warmup runs
      continue;
    }
    // train_step's forward_backward, with the intervention between the forward and the backward pass
    const nn::Batch batch = nn::training_batch(corpus.data, m.batch, m.seq, m.seed, step);
    Tape& tape = Tape::current();
    tape.reset();
    model.zero_grad();
    const Var loss = model.loss(batch.inputs, batch.targets);
    if (!std::isfinite(loss.value()())) break;
    before_backward(tape);
    loss.backward();
    nn::apply_update(*optimizer, schedule, step, 0.0);
  }
  SmallRun r;
  r.final_loss = nn::evaluate(model, corpus.data, m.batch, m.seq, kSmallEvalBatches, m.seed);
  r.verdict = experiments::verdict_of(r.final_loss, {corpus.uniform, corpus.unigram, 0.05});
  // The LN inputs on one held-out-size batch: each block's two residual sums (Post-LN: what LN1, LN2 read).
  const nn::Batch batch = nn::training_batch(corpus.data, m.batch, m.seq, m.seed, kSmallSteps);
  Tape::current().reset();
  {
    NoGradScope no_grad;
    model.loss(batch.inputs, batch.targets);
  }
  double sum = 0.0;
  for (const auto& block : model.blocks)
    for (const Var& s : {block->last.attn_sum, block->last.mlp_sum}) sum += norm(s.value()) / std::sqrt(double(s.value().size()));
  r.ln_input_rms = sum / static_cast<double>(2 * model.blocks.size());
  Tape::current().reset();
  return r;
}

// A prediction file: "name value" per line, '#' starts a comment. Values are numbers or '?' (not
// answered yet). Throws gs::Error naming the file and the line for anything else.
inline std::map<std::string, std::string> read_predictions(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read the predictions file " + path);
  std::map<std::string, std::string> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.empty()) continue;
    if (w.size() < 2) throw Error(path + ":" + std::to_string(n) + ": expected a name and a value, got '" + line + "'");
    std::string name;
    for (std::size_t i = 0; i + 1 < w.size(); ++i) name += (i ? " " : "") + w[i];
    out[name] = w.back();
  }
  return out;
}

}  // namespace gs::coursework
