#include "experiments/demo_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "analysis/collapse.hpp"
#include "analysis/step_measures.hpp"
#include "analysis/stream_split.hpp"
#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "experiments/lib/threads.hpp"
#include "experiments/lib/interrupt.hpp"
#include "experiments/lib/stats.hpp"
#include "experiments/lib/training.hpp"
#include "nn/optim.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::explorer {
namespace {

using experiments::fmt;  // "%.4g" (stats.hpp)

std::unique_ptr<nn::Optimizer> optimizer_of(const DemoRun& spec, nn::TransformerLM& model) {
  if (spec.change == "radam")
    return std::make_unique<nn::RAdam>(model.named_parameters(), nn::RAdamOptions{0.9, 0.98, 1e-8, 0.0, false});
  if (!spec.change.empty()) model.set_interventions(nn::parse_interventions(spec.change));
  return std::make_unique<nn::Adam>(model.named_parameters(), nn::AdamOptions{0.9, 0.98, 1e-8, 0.0, false});
}

// What a run ends with: its page record and its held-out loss (NaN if it did not finish).
struct Trained {
  Run run;
  double held_out = NAN;
};

// The probe batch of causes and dynamics (held out, the same for every run of a seed) and the unigram
// distribution of the training text: what link 1's output move and the head's KL are measured on.
struct Probe {
  nn::Batch batch;
  std::vector<double> unigram;
};
Probe probe_of(const nn::Corpus& corpus, std::size_t batch, std::size_t seq, unsigned seed) {
  std::mt19937_64 rng = nn::rng_for(seed, 0, nn::RngPurpose::probe);
  return {corpus.data.batch(nn::Split::validation, batch, seq, rng),
          nn::unigram_distribution(corpus.data.tokens(nn::Split::train), corpus.data.vocab())};
}

// The facts the page shows beside a run: its setup, its held-out loss after `updates` updates, and the
// head's KL from the unigram distribution after the last (NaN when the run did not finish).
std::vector<std::pair<std::string, std::string>> run_facts(const DemoRun& spec, const DemoOptions& o, const nn::Corpus& corpus,
                                                           std::size_t updates, double held_out, double head_kl) {
  const nn::ModelConfig& c = o.model;
  return {{"placement", spec.placement},
          {"warmup", std::to_string(spec.warmup) + " steps"},
          {"model", std::to_string(c.layers) + " layers, d " + std::to_string(c.d_model) + ", " +
                        std::to_string(c.heads) + " heads, d_ff " + std::to_string(c.ff())},
          {"data", "Markov corpus, vocab " + std::to_string(c.vocab) + ", batch " + std::to_string(o.batch) +
                       " x seq " + std::to_string(c.context)},
          {"optimizer", std::string(spec.change == "radam" ? "RAdam" : "Adam") + "(0.9, 0.98, eps 1e-8), lr " + fmt(o.lr) +
                            ", no clipping"},
          {"intervention", spec.change.empty() || spec.change == "radam" ? "none" : spec.change + " in every block"},
          {"seed", std::to_string(c.seed)},
          {"steps", std::to_string(o.steps) + " updates"},
          {"held-out loss", fmt(held_out) + " after " + std::to_string(updates) + " updates (" +
                                std::to_string(o.eval_batches) + " batches)"},
          {"head KL(u || p)", fmt(head_kl) +
                                  " nats: the head's predictions on the probe batch after the last update, from "
                                  "the unigram distribution u (0: it predicts u everywhere)"},
          {"reference losses", "uniform log V " + fmt(corpus.uniform) + ", unigram H1 " + fmt(corpus.unigram) +
                                   ", entropy-rate floor " + fmt(corpus.floor)}};
}

Trained train_one(const DemoRun& spec, const DemoOptions& o, const nn::Corpus& corpus) {
  nn::ModelConfig config = o.model;
  config.placement = nn::parse_placement(spec.placement);
  const std::size_t T = config.context;
  const unsigned seed = config.seed;
  nn::TransformerLM model(config);
  const std::unique_ptr<nn::Optimizer> optimizer = optimizer_of(spec, model);
  const nn::Schedule schedule{nn::ScheduleKind::warmup, o.lr, spec.warmup, o.steps, 0.1};
  const Probe probe = probe_of(corpus, o.batch, T, seed);

  RunRecorder recorder(spec.name(), model, o.recorder);
  Run& run = recorder.run();
  run.declare_chart({"lr", "learning rate", "The rate of the update that followed the step's pass (linear warmup "
                     "over the first W steps, then constant).", "lr", false});
  run.declare_chart({"output_move", "output move", "RMS over the probe batch of logits after the update "
                     "minus logits before it (dynamics' link 1).", "RMS", true});
  run.declare_chart({"top_spread", "the top block's distance from one vector", "1 - the mean cosine between the "
                     "positions of a sequence in the top block's output (0: every position holds one direction).",
                     "1 - cosine", true});
  const std::string top = "blocks." + std::to_string(config.layers - 1);
  Tape& tape = Tape::current();  // this thread's
  tape.keep_contributions = true;
  analysis::ProbePass before = analysis::probe_pass(model, probe.batch);
  std::size_t step = 0;
  for (; step <= o.steps; ++step) {
    experiments::stop_if_requested(step);  // SIGINT, SIGTERM: between steps (interrupt.hpp)
    const double loss = nn::forward_backward(
        model, nn::training_batch(corpus.data, o.batch, T, seed, step));
    if (!std::isfinite(loss)) break;
    recorder.record_pass(step, tape, loss);
    std::vector<double> cosine, dead, entropy;  // the collapse charts, from this pass
    for (const analysis::BlockCollapse& b : analysis::block_collapse(model, false)) {
      cosine.push_back(b.out_cosine), dead.push_back(b.dead_units), entropy.push_back(b.entropy_share);
    }
    chart_collapse(run, step, cosine, dead, entropy);
    run.add_point("top_spread", top, step, 1.0 - cosine.back());  // in double: Post-LN's top ends ~1e-11 from 1
    if (step == o.steps) break;  // the last pass is recorded, not followed by an update
    const nn::Update u = nn::apply_update(*optimizer, schedule, step, 0.0);
    recorder.record_update(step);
    run.add_point("lr", "lr", step, u.lr);
    analysis::ProbePass after = analysis::probe_pass(model, probe.batch);  // resets the tape: after the recorder
    run.add_point("output_move", "logits", step, analysis::rms(after.logits - before.logits));
    before = std::move(after);
  }
  tape.keep_contributions = false;
  tape.reset();
  const bool finished = step == o.steps;
  const double held_out = finished ? nn::evaluate(model, corpus.data, o.batch, T, o.eval_batches, seed) : NAN;
  const analysis::Collapse end = analysis::collapse_on(model, probe.batch.inputs, probe.unigram);
  run.facts = run_facts(spec, o, corpus, step, held_out, finished ? end.head.kl_to_unigram : NAN);
  return {recorder.take(), held_out};
}

// The frozen-blocks baseline of a placement (causes' row "frozen blocks"): the same model, seed,
// batches and constant lr, with every block and ln_f at init; returns its held-out loss.
double train_frozen(const std::string& placement, const DemoOptions& o, const nn::Corpus& corpus) {
  nn::ModelConfig config = o.model;
  config.placement = nn::parse_placement(placement);
  const std::size_t T = config.context;
  nn::TransformerLM model(config);
  const std::unique_ptr<nn::Optimizer> optimizer = optimizer_of({placement, 0, ""}, model);
  experiments::freeze_blocks(*optimizer);
  const nn::Schedule schedule{nn::ScheduleKind::warmup, o.lr, 0, o.steps, 0.1};
  for (std::size_t step = 0; step < o.steps; ++step) {
    experiments::stop_if_requested(step);
    if (!std::isfinite(nn::forward_backward(model, nn::training_batch(corpus.data, o.batch, T, config.seed, step))))
      return NAN;
    nn::apply_update(*optimizer, schedule, step, 0.0);
  }
  Tape::current().reset();
  return nn::evaluate(model, corpus.data, o.batch, T, o.eval_batches, config.seed);
}

// "beats frozen blocks (2.105 vs 2.4 frozen, margin 0.05)" or "does not beat frozen blocks (...)".
std::string verdict_text(double held_out, double frozen, double margin) {
  return std::string(experiments::beats_frozen(held_out, frozen, margin) ? "beats" : "does not beat") +
         " frozen blocks (" + fmt(held_out) + " vs " + fmt(frozen) + " frozen, margin " + fmt(margin) + ")";
}

}  // namespace

std::string DemoRun::name() const {
  return placement + ", warmup " + std::to_string(warmup) + (change.empty() ? "" : ", " + change);
}

Page demo_page(const DemoOptions& o) {
  const nn::Corpus corpus = nn::build_corpus({}, o.model.vocab, o.model.seed, o.model.context);
  std::vector<std::string> placements;  // those of the runs, each once: a frozen-blocks run each
  for (const DemoRun& r : o.runs)
    if (std::find(placements.begin(), placements.end(), r.placement) == placements.end()) placements.push_back(r.placement);
  std::vector<Trained> runs(o.runs.size());
  std::vector<double> frozen(placements.size(), NAN);
  // the recorded runs, then the baselines (the cheapest tasks, no recorder): a signal during the runs
  // stops at the step of the run that saw it, with no baseline thread racing it to report another
  experiments::parallel_for(o.runs.size(), o.jobs, [&](std::size_t i) { runs[i] = train_one(o.runs[i], o, corpus); });
  experiments::parallel_for(placements.size(), o.jobs, [&](std::size_t i) { frozen[i] = train_frozen(placements[i], o, corpus); });
  Page page;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::size_t p = static_cast<std::size_t>(
        std::find(placements.begin(), placements.end(), o.runs[i].placement) - placements.begin());
    Run& run = runs[i].run;
    run.facts.push_back({"frozen-blocks loss", fmt(frozen[p]) + ": the same " + o.runs[i].placement + " model, seed, batches and "
                         "lr " + fmt(o.lr) + " (no warmup, no intervention) with every block and ln_f held at init; only the "
                         "embeddings and the head learn"});
    run.facts.push_back({"verdict", verdict_text(runs[i].held_out, frozen[p], o.margin)});
    std::printf("explorer: trained %s: %s\n", run.name.c_str(), run.facts.back().second.c_str());
    std::fflush(stdout);
    page.runs.push_back(std::move(run));
  }
  page.title = "gradscope explorer: " + std::to_string(o.model.layers) + "-layer Transformer, Post-LN vs Pre-LN";
  return page;
}

}  // namespace gs::explorer
