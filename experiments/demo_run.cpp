#include "experiments/demo_run.hpp"

#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>

#include "analysis/collapse.hpp"
#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "experiments/lib/threads.hpp"
#include "experiments/lib/interrupt.hpp"
#include "experiments/lib/training.hpp"
#include "nn/optim.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::explorer {
namespace {

std::string fmt(double x, int digits = 4) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

std::unique_ptr<nn::Optimizer> optimizer_of(const DemoRun& spec, nn::TransformerLM& model) {
  if (spec.change == "radam")
    return std::make_unique<nn::RAdam>(model.named_parameters(), nn::RAdamOptions{0.9, 0.98, 1e-8, 0.0, false});
  if (!spec.change.empty()) model.set_interventions(nn::parse_interventions(spec.change));
  return std::make_unique<nn::Adam>(model.named_parameters(), nn::AdamOptions{0.9, 0.98, 1e-8, 0.0, false});
}

Run train_one(const DemoRun& spec, const DemoOptions& o, const nn::Corpus& corpus) {
  nn::ModelConfig config = o.model;
  config.placement = nn::parse_placement(spec.placement);
  const std::size_t T = config.context;
  const unsigned seed = config.seed;
  nn::TransformerLM model(config);
  const std::unique_ptr<nn::Optimizer> optimizer = optimizer_of(spec, model);
  const nn::Schedule schedule{nn::ScheduleKind::warmup, o.lr, spec.warmup, o.steps, 0.1};

  RunRecorder recorder(spec.name(), model, o.recorder);
  Run& run = recorder.run();
  run.declare_chart({"lr", "learning rate", "The rate of the update that followed the step's pass (linear warmup "
                     "over the first W steps, then constant).", "lr", false});
  Tape& tape = Tape::current();  // this thread's
  tape.keep_contributions = true;
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
    if (step == o.steps) break;  // the last pass is recorded, not followed by an update
    const nn::Update u = nn::apply_update(*optimizer, schedule, step, 0.0);
    recorder.record_update(step);
    run.add_point("lr", "lr", step, u.lr);
  }
  tape.keep_contributions = false;
  tape.reset();
  const double held_out = nn::evaluate(model, corpus.data, o.batch, T, o.eval_batches, seed);
  const experiments::Verdict verdict =
      experiments::verdict_of(step == o.steps ? held_out : NAN, {corpus.uniform, corpus.unigram, 0.05});
  run.facts = {{"placement", spec.placement},
               {"warmup", std::to_string(spec.warmup) + " steps"},
               {"model", std::to_string(config.layers) + " layers, d " + std::to_string(config.d_model) + ", " +
                             std::to_string(config.heads) + " heads, d_ff " + std::to_string(config.d_ff)},
               {"data", "Markov corpus, vocab " + std::to_string(config.vocab) + ", batch " + std::to_string(o.batch) +
                            " x seq " + std::to_string(T)},
               {"optimizer", std::string(spec.change == "radam" ? "RAdam" : "Adam") + "(0.9, 0.98, eps 1e-8), lr " + fmt(o.lr) +
                                 ", no clipping"},
               {"intervention", spec.change.empty() || spec.change == "radam" ? "none" : spec.change + " in every block"},
               {"seed", std::to_string(seed)},
               {"steps", std::to_string(o.steps) + " updates"},
               {"held-out loss", fmt(held_out) + " after " + std::to_string(step) + " updates (" +
                                     std::to_string(o.eval_batches) + " batches)"},
               {"verdict", experiments::to_string(verdict) + " (uniform log V " + fmt(corpus.uniform) +
                               ", unigram H1 " + fmt(corpus.unigram) + ", floor " + fmt(corpus.floor) + ")"}};
  return recorder.take();
}

}  // namespace

std::string DemoRun::name() const {
  return placement + ", warmup " + std::to_string(warmup) + (change.empty() ? "" : ", " + change);
}

Page demo_page(const DemoOptions& o) {
  const nn::Corpus corpus = nn::build_corpus({}, o.model.vocab, o.model.seed, o.model.context);
  std::vector<Run> runs(o.runs.size());
  std::mutex mutex;
  experiments::parallel_for(o.runs.size(), o.jobs, [&](std::size_t i) {
    runs[i] = train_one(o.runs[i], o, corpus);
    std::lock_guard<std::mutex> lock(mutex);
    std::printf("explorer: trained %s (%s)\n", runs[i].name.c_str(), runs[i].facts.back().second.c_str());
    std::fflush(stdout);
  });
  Page page;
  page.title = "gradscope explorer: " + std::to_string(o.model.layers) + "-layer Transformer, Post-LN vs Pre-LN";
  page.runs = std::move(runs);
  return page;
}

}  // namespace gs::explorer
