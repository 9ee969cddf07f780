#include "experiments/lib/training.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "engine/engine.hpp"
#include "explorer/recorder.hpp"
#include "experiments/lib/interrupt.hpp"
#include "analysis/step_measures.hpp"
#include "nn/data/markov.hpp"

namespace gs::experiments {

using namespace gs::analysis;

std::mt19937_64 rng_for(unsigned seed, std::size_t step, RngPurpose purpose) {
  std::seed_seq seq{seed, static_cast<unsigned>(step), static_cast<unsigned>(step >> 32), static_cast<unsigned>(purpose)};
  return std::mt19937_64(seq);
}

nn::Batch training_batch(const nn::Dataset& data, std::size_t batch, std::size_t seq, unsigned seed, std::size_t step) {
  std::mt19937_64 rng = rng_for(seed, step, RngPurpose::train);
  return data.batch(nn::Split::train, batch, seq, rng);
}

// ---- corpora ----

double unigram_entropy(const nn::Tokens& tokens, std::size_t vocab) {
  std::vector<double> count(vocab, 0.0);
  for (std::int64_t t : tokens) count.at(static_cast<std::size_t>(t)) += 1.0;
  double h = 0.0;
  for (double c : count)
    if (c > 0) {
      const double p = c / static_cast<double>(tokens.size());
      h -= p * std::log(p);
    }
  return h;
}

namespace {

Corpus make_corpus(std::string name, nn::Dataset data, double floor, double window_floor) {
  const double uniform = std::log(static_cast<double>(data.vocab()));
  const double unigram = unigram_entropy(data.tokens(nn::Split::train), data.vocab());
  return Corpus{std::move(name), std::move(data), uniform, unigram, floor, window_floor};
}

Corpus text_corpus(const std::filesystem::path& path) {
  nn::Dataset data = nn::char_dataset(path);
  if (data.vocab() < 2)  // one symbol: every next token is certain, loss 0 with nothing learned
    throw Error("--text " + path.string() + ": has " + std::to_string(data.vocab()) +
                " distinct byte(s); a language model needs at least 2 symbols to predict (as --vocab is at least 2)");
  return make_corpus(path.string(), std::move(data), NAN, NAN);
}

}  // namespace

Corpus build_corpus(const CorpusOptions& o, std::size_t vocab, unsigned seed, std::size_t seq) {
  if (!o.text.empty()) return text_corpus(o.text);
  const nn::MarkovChain chain({vocab, o.order, o.concentration, o.smoothing, seed});
  return make_corpus("markov", nn::markov_dataset(chain, o.train_tokens, o.validation_tokens, seed),
                     chain.entropy_rate(), chain.window_floor(seq));
}

double corpus_bytes(const CorpusOptions& o, std::size_t vocab) {
  if (!o.text.empty()) return 9.0 * static_cast<double>(std::filesystem::file_size(o.text));  // a byte, a token
  const double tokens = static_cast<double>(o.train_tokens + o.validation_tokens);
  return 8.0 * (tokens + std::pow(static_cast<double>(vocab), static_cast<double>(o.order) + 1.0));
}

// ---- evaluation and training ----

double evaluate(nn::TransformerLM& model, const nn::Dataset& data, std::size_t batch, std::size_t seq,
                std::size_t batches, unsigned seed) {
  Tape& tape = Tape::current();
  NoGradScope no_grad(tape);
  std::mt19937_64 rng = rng_for(seed, 0, RngPurpose::eval);
  double total = 0.0;
  for (std::size_t i = 0; i < batches; ++i) {
    tape.reset();
    const nn::Batch b = data.batch(nn::Split::validation, batch, seq, rng);
    model.loss(b.inputs, b.targets);
    total += model.last.ce.value()();  // the cross-entropy, without the z-loss term
  }
  tape.reset();
  return total / static_cast<double>(batches);
}

double forward_backward(nn::TransformerLM& model, const nn::Batch& batch) {
  Tape::current().reset();
  model.zero_grad();
  const Var l = model.loss(batch.inputs, batch.targets);  // CE (+ z-loss)
  if (std::isfinite(l.value()())) l.backward();
  return std::isfinite(l.value()()) ? model.last.ce.value()() : l.value()();  // the CE, NaN/Inf if the loss was
}

Update apply_update(nn::Optimizer& optimizer, const nn::Schedule& schedule, std::size_t step, double clip) {
  Update u;
  u.grad_norm = nn::clip_grad_norm(optimizer.parameters(), clip);
  u.lr = schedule.lr(step);
  optimizer.step(u.lr);
  return u;
}

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

bool StepResult::finite() const { return std::isfinite(loss); }

StepResult train_step(nn::TransformerLM& model, nn::Optimizer& optimizer, const StepSetup& setup, std::size_t step) {
  return train_step(model, optimizer, setup, step, training_batch(*setup.data, setup.batch, setup.seq, setup.seed, step));
}

StepResult train_step(nn::TransformerLM& model, nn::Optimizer& optimizer, const StepSetup& setup, std::size_t step,
                      const nn::Batch& batch) {
  stop_if_requested(step);  // SIGINT/SIGTERM: stop here, between steps (interrupt.hpp)
  StepResult r;
  if (setup.recorder) Tape::current().keep_contributions = true;  // the recorder reads the contributions
  r.loss = forward_backward(model, batch);
  if (!r.finite()) {
    r.grad_norm = NAN;
    r.lr = setup.schedule.lr(step);
    return r;
  }
  if (setup.recorder) setup.recorder->record_pass(step, Tape::current(), r.loss);
  const Update u = apply_update(optimizer, setup.schedule, step, setup.clip);
  r.grad_norm = u.grad_norm;
  r.lr = u.lr;
  if (setup.recorder) {
    setup.recorder->record_update(step);
    explorer::Run& run = setup.recorder->run();
    run.declare_chart({"lr", "learning rate", "The rate of the update that followed the step's pass.", "lr", false});
    run.add_point("lr", "lr", step, u.lr);
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
  }
  return r;
}

// ---- verdicts ----

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
