#include "experiments/lib/training.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "explorer/recorder.hpp"
#include "experiments/lib/harness.hpp"
#include "experiments/lib/interrupt.hpp"
#include "experiments/lib/report.hpp"
#include "analysis/step_measures.hpp"

namespace gs::experiments {

using namespace gs::analysis;

nn::Interventions OptimizerSetup::interventions() const {
  std::string list;
  for (const std::string& name : intervene) list += (list.empty() ? "" : ",") + name;
  return nn::parse_interventions(list);
}

std::unique_ptr<nn::Optimizer> OptimizerSetup::make(nn::TransformerLM& model) const {
  model.set_interventions(interventions());
  model.z_loss = z_loss;
  return nn::make_optimizer(optimizer, model.named_parameters(), weight_decay, beta1, beta2, eps, adam_v0 == "g0sq");
}

nn::Schedule OptimizerSetup::with_hold(nn::Schedule schedule) const {
  schedule.hold = hold;
  schedule.total = schedule.total > hold ? schedule.total - hold : 0;
  return schedule;
}

std::string OptimizerSetup::loss_term_flag() const { return z_loss > 0 ? "--z-loss " + fmt(z_loss) : ""; }

std::string OptimizerSetup::text() const {
  char buf[160];
  if (optimizer == "sgd")
    std::snprintf(buf, sizeof buf, "sgd(momentum 0.9)");
  else
    std::snprintf(buf, sizeof buf, "%s(beta1 %g, beta2 %g, eps %g)", optimizer.c_str(), beta1, beta2, eps);
  std::string s = buf;
  if (adam_v0 == "g0sq") s += ", v0 g0sq";
  if (z_loss != 0.0) {
    std::snprintf(buf, sizeof buf, ", z-loss %g", z_loss);
    s += buf;
  }
  if (hold) s += ", hold " + std::to_string(hold);
  const nn::Interventions i = interventions();
  if (i.any()) s += ", intervene " + nn::to_string(i);
  return s;
}

nn::StepHooks step_hooks(const nn::TransformerLM& model, explorer::RunRecorder* recorder) {
  nn::StepHooks hooks;
  hooks.before = [recorder](std::size_t step) {
    stop_if_requested(step);  // SIGINT/SIGTERM: stop here, between steps (interrupt.hpp)
    if (recorder) Tape::current().keep_contributions = true;  // the recorder reads the contributions
  };
  if (!recorder) return hooks;
  hooks.after_backward = [recorder](std::size_t step, double loss) { recorder->record_pass(step, Tape::current(), loss); };
  hooks.after_update = [recorder, &model](std::size_t step, double lr) {
    recorder->record_update(step);
    explorer::Run& run = recorder->run();
    run.declare_chart({"lr", "learning rate", "The rate of the update that followed the step's pass.", "lr", false});
    run.add_point("lr", "lr", step, lr);
    // The stability measures of the step's forward pass (step_measures.hpp, docs/stability.md).
    const std::vector<double> logit_max = attention_logit_max(model);
    run.declare_chart({"att_logit_max", "largest attention logit", "The largest |q.k|/sqrt(dh) of any head in the "
                       "step's forward pass (attention-logit growth; qk-norm bounds it).", "|logit|", true});
    run.add_point("att_logit_max", "max over heads", step, *std::max_element(logit_max.begin(), logit_max.end()));
    const OutputLogits o = output_logits(model);
    run.declare_chart({"log_z", "log Z of the output", "log Z = logsumexp of the output logits, mean and max over the "
                       "step's positions (what the z-loss holds near 0).", "log Z", false});
    run.add_point("log_z", "mean", step, o.log_z_mean);
    run.add_point("log_z", "max", step, o.log_z_max);
  };
  return hooks;
}

// ---- a step that is not finite ----

std::string not_finite_text(const nn::StepResult& r, std::size_t step) {
  const std::string at = " at step " + std::to_string(step);
  if (!std::isfinite(r.loss)) return "the loss is " + fmt(r.loss) + at;
  return "the gradient norm is " + fmt(r.grad_norm) + at + " (loss " + fmt(r.loss, 4) + ")";
}

void refuse_first_step(const nn::StepResult& r, std::size_t step, const std::string& suspects) {
  if (r.finite() || step > 0) return;
  throw Error(not_finite_text(r, step) + ", before any update, so no learning rate is at play: " +
              (suspects.empty() ? "the initialization makes it" : suspects + " makes it") +
              (float32_build ? " (float32 overflows past 3.4e38)" : " (float64 overflows past 1e308)"));
}

// ---- verdicts ----

bool is_block_parameter(const std::string& name) {
  return name.starts_with("blocks.") || name.starts_with("ln_f.");
}

void freeze_blocks(nn::Optimizer& optimizer) {
  for (std::size_t p = 0; p < optimizer.parameters().size(); ++p)
    if (is_block_parameter(optimizer.parameters()[p].name)) optimizer.set_lr_scale(p, 0.0);
}

bool beats_frozen(double final_loss, double frozen_lowest, double margin) {
  return final_loss < frozen_lowest - margin;
}

std::string to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::trained:
      return "trained";
    case Verdict::stuck:
      return "stuck";
    case Verdict::diverged:
      return "diverged";
  }
  return "?";
}

Verdict verdict_of(double final_loss, const Thresholds& t) {
  if (!std::isfinite(final_loss) || final_loss > t.uniform + t.margin) return Verdict::diverged;
  if (final_loss > t.stuck - t.margin) return Verdict::stuck;
  return Verdict::trained;
}

void check_margin(const nn::Corpus& corpus, double margin) {
  const bool markov = std::isfinite(corpus.floor);
  const double floor = markov ? corpus.floor : 0.0;
  if (corpus.unigram - margin > floor) return;
  throw FlagError("--margin " + fmt(margin) + " leaves no verdict 'trained' to give: a run is stuck above H1 - margin = " +
                  fmt(corpus.unigram - margin, 4) + " nats, and no model gets below " +
                  (markov ? "the corpus's entropy rate " + fmt(floor, 4) : std::string("0")) +
                  "; choose a margin below " + fmt(corpus.unigram - floor, 4) + " (the default is 0.05)");
}

std::string verdict_text(const std::vector<Verdict>& verdicts, std::size_t first_nan_step) {
  std::map<Verdict, std::size_t> count;
  for (Verdict v : verdicts) ++count[v];
  std::string text;
  for (const auto& [v, n] : count) {
    if (!text.empty()) text += ", ";
    if (count.size() > 1) text += std::to_string(n) + " ";
    text += to_string(v);
  }
  if (first_nan_step) text += " (NaN at step " + std::to_string(first_nan_step) + ")";
  return text;
}

}  // namespace gs::experiments
