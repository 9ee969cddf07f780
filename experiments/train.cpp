// train: trains a TransformerLM on a synthetic Markov corpus (the default: its entropy rate is the
// loss floor, printed at the start) or on the characters of any text file (--text FILE).
//
//   build/bin/train                                   defaults: within 0.15 nats of the floor
//   build/bin/train --text /usr/share/common-licenses/GPL-3 --steps 3000 --sample 400
//   build/bin/train --steps 500 --save ckpt && build/bin/train --steps 1000 --resume ckpt
//
// Every step draws its batch from an RNG seeded by (seed, step), so a resumed run sees exactly the
// batches the uninterrupted run would have seen, and ends with the same weights.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>

#include <nlohmann/json.hpp>

#include "engine/engine.hpp"
#include "experiments/common/graph.hpp"
#include "experiments/common/harness.hpp"
#include "experiments/common/report.hpp"
#include "experiments/common/optimizer_flags.hpp"
#include "experiments/common/training.hpp"
#include "nn/io/checkpoint.hpp"
#include "nn/io/checksum.hpp"
#include "nn/io/config_json.hpp"
#include "nn/io/ownership.hpp"
#include "nn/optim.hpp"
#include "nn/schedule.hpp"
#include "nn/transformer_lm.hpp"

using namespace gs;
using namespace gs::experiments;
using Clock = std::chrono::steady_clock;

namespace {

struct TrainOptions {
  std::size_t steps = 1500;
  double lr = 1e-2;
  std::size_t warmup = 100;
  std::string schedule = "cosine";
  OptimizerSetup opt = [] {  // make_optimizer's defaults: AdamW(0.9, 0.999, eps 1e-8)
    OptimizerSetup s;
    s.optimizer = "adamw";
    s.beta2 = 0.999;
    return s;
  }();
  double clip = 1.0;                 // max global gradient norm; 0: no clipping
  std::string text;                  // a text file; empty: the Markov corpus
  std::size_t markov_order = 2;
  double markov_concentration = 0.05;
  std::size_t eval_every = 250;      // steps between validation evaluations (0: only at the end)
  std::size_t eval_batches = 40;     // validation batches averaged per evaluation
  std::string out, save, resume, dump;
  std::size_t sample = 0;
  double temperature = 1.0;          // 0: greedy
};

// n tokens sampled one at a time from softmax(logits / temperature), each conditioned on the last
// `context` tokens, starting from one token of the validation split. Temperature 0 is the limit:
// always the most likely token (the first of equals).
std::string sample(nn::TransformerLM& model, const nn::Dataset& data, std::size_t n, double temperature,
                   unsigned seed) {
  Tape& tape = Tape::current();
  NoGradScope no_grad(tape);
  std::mt19937_64 rng = rng_for(seed, 0, RngPurpose::sample);
  const nn::Tokens& val = data.tokens(nn::Split::validation);
  nn::Tokens tokens{val[std::uniform_int_distribution<std::size_t>(0, val.size() - 1)(rng)]};
  const std::size_t context = model.config.context, vocab = model.config.vocab;
  for (std::size_t i = 0; i < n; ++i) {
    tape.reset();
    const std::size_t t = std::min(tokens.size(), context);
    IndexArray ids = IndexArray::from_shape({1, t});
    std::copy(tokens.end() - static_cast<std::ptrdiff_t>(t), tokens.end(), ids.begin());
    const Array& logits = model.logits(ids).value();  // (1, t, V); the last row predicts the next token
    if (temperature == 0.0) {  // greedy: the most likely token
      std::size_t best = 0;
      for (std::size_t v = 1; v < vocab; ++v)
        if (logits(0, t - 1, v) > logits(0, t - 1, best)) best = v;
      tokens.push_back(static_cast<std::int64_t>(best));
      continue;
    }
    std::vector<double> p(vocab);
    double max = -INFINITY;
    for (std::size_t v = 0; v < vocab; ++v) max = std::max(max, logits(0, t - 1, v) / temperature);
    for (std::size_t v = 0; v < vocab; ++v) p[v] = std::exp(logits(0, t - 1, v) / temperature - max);
    std::discrete_distribution<std::int64_t> next(p.begin(), p.end());
    tokens.push_back(next(rng));
  }
  tape.reset();
  return data.decode(nn::Tokens(tokens.begin() + 1, tokens.end()));
}

// The model's shape: from the flags, or from the checkpoint being resumed, whose model flags must agree.
nn::ModelConfig model_config(const Experiment& ex, const TrainOptions& o, std::optional<nn::CheckpointInfo>& resumed) {
  nn::ModelConfig config = ex.model.config();
  if (o.resume.empty()) return config;
  resumed = nn::read_checkpoint_info(o.resume);
  if (!model_flags_given(ex.app).empty()) {
    nn::ModelConfig flags = config;
    if (!o.text.empty()) flags.vocab = resumed->config.vocab;  // a text file sets the vocab below
    std::string d = nn::architecture_difference(resumed->config, flags);
    if (d.empty() && ex.app.get_option("--seed")->count() && flags.seed != resumed->config.seed)
      d = "seed is " + std::to_string(resumed->config.seed) + " in one and " + std::to_string(flags.seed) + " in the other";
    if (!d.empty())
      throw Error("--resume " + o.resume + ": the model flags disagree with the checkpoint: " + d + " (checkpoint, flags)");
  }
  return resumed->config;  // its seed too: the data and the batches are drawn from it
}

// What the data is, recorded in checkpoints; a resumed run must train on the same.
nlohmann::json data_record(const TrainOptions& o, const std::optional<nn::CheckpointInfo>& resumed) {
  nlohmann::json record = {{"data", o.text.empty() ? "markov" : o.text}};
  if (o.text.empty()) {
    record["markov_order"] = o.markov_order;
    record["markov_concentration"] = o.markov_concentration;
  } else {
    record["data_sha256"] = nn::sha256_of_file(o.text);  // the same name must also be the same bytes
  }
  if (resumed) {
    const nn::JsonField saved = resumed->train();
    for (const auto& [key, now] : record.items())
      if (saved.has(key) && saved.at(key).json() != now)
        throw Error("--resume " + o.resume + ": the checkpoint was trained with " + key + " " +
                    saved.at(key).json().dump() + ", this run asks for " + now.dump());
  }
  return record;
}

// The corpus, printed; a text file sets the model's vocab.
Corpus load_corpus(const TrainOptions& o, nn::ModelConfig& config, const std::optional<nn::CheckpointInfo>& resumed) {
  if (o.text.empty()) {
    const MarkovCorpusOptions mo{config.vocab, o.markov_order, o.markov_concentration, config.seed};
    Corpus corpus = markov_corpus(mo, config.context);
    std::printf("data: Markov chain, vocab %zu, order %zu, concentration %g, seed %u\n", mo.vocab, mo.order,
                mo.concentration, config.seed);
    std::printf("      entropy rate (the loss floor) %.4f nats/token; log V = %.4f; best mean loss over windows of %zu: "
                "%.4f\n", corpus.floor, corpus.uniform, config.context, corpus.window_floor);
    return corpus;
  }
  Corpus corpus = text_corpus(o.text);
  const nn::Dataset& data = corpus.data;
  std::printf("data: %s, %zu training and %zu validation characters, vocab %zu\n", o.text.c_str(),
              data.tokens(nn::Split::train).size(), data.tokens(nn::Split::validation).size(), data.vocab());
  if (resumed && resumed->config.vocab != data.vocab())
    throw Error("--text " + o.text + " has vocab " + std::to_string(data.vocab()) + ", the checkpoint " +
                std::to_string(resumed->config.vocab));
  config.vocab = data.vocab();
  return corpus;
}

struct Trained {
  double seconds;   // spent training (evaluations included, the final one not)
  double val_loss;  // the final validation loss
};

// Steps start .. o.steps: batch, forward, backward, clip, update; train.csv and eval.csv in --out; then
// the validation loss averaged over eval_batches batches.
Trained train_loop(nn::TransformerLM& model, nn::Optimizer& optimizer, const StepSetup& setup, std::size_t start,
                  const TrainOptions& o) {
  std::unique_ptr<CsvWriter> train_csv, eval_csv;
  if (!o.out.empty()) {
    train_csv = std::make_unique<CsvWriter>(std::filesystem::path(o.out) / "train.csv",
                                            std::vector<std::string>{"step", "loss", "lr", "grad_norm", "tokens_per_s"});
    eval_csv = std::make_unique<CsvWriter>(std::filesystem::path(o.out) / "eval.csv",
                                           std::vector<std::string>{"step", "val_loss"});
    if (!o.resume.empty()) {  // continue the resumed run's files
      train_csv->keep_existing_rows(static_cast<double>(start));
      eval_csv->keep_existing_rows(static_cast<double>(start));
    }
  }
  const std::size_t B = setup.batch, T = setup.seq;
  Progress progress("train", o.steps - std::min(start, o.steps), "steps");
  const auto train_start = Clock::now();
  double stepping_seconds = 0.0;
  for (std::size_t step = start; step < o.steps; ++step) {
    const auto step_start = Clock::now();
    const StepResult r = train_step(model, optimizer, setup, step);
    if (!r.finite()) throw Error("the loss is " + std::to_string(r.loss) + " at step " + std::to_string(step));
    const double step_seconds = seconds_since(step_start);
    stepping_seconds += step_seconds;  // excludes evaluations
    char what[128];
    std::snprintf(what, sizeof what, "loss %.4f lr %.2e |g| %.3f %6.1fk tok/s", r.loss, r.lr, r.grad_norm,
                  static_cast<double>((step + 1 - start) * B * T) / stepping_seconds / 1000.0);
    progress.advance(1, what);
    if (train_csv)
      train_csv->row({static_cast<double>(step + 1), r.loss, r.lr, r.grad_norm, static_cast<double>(B * T) / step_seconds});
    if (o.eval_every && (step + 1) % o.eval_every == 0 && step + 1 < o.steps) {
      const double val = evaluate(model, *setup.data, B, T, o.eval_batches, setup.seed);
      progress.finish();
      std::printf("step %zu: validation loss %.4f\n", step + 1, val);
      std::fflush(stdout);
      if (eval_csv) eval_csv->row({static_cast<double>(step + 1), val});
    }
  }
  progress.finish();
  Tape::current().reset();
  const double seconds = seconds_since(train_start);
  const double val = evaluate(model, *setup.data, B, T, o.eval_batches, setup.seed);
  if (eval_csv) eval_csv->row({static_cast<double>(o.steps), val});
  std::printf("final: validation loss %.4f (mean of %zu batches of %zux%zu)", val, o.eval_batches, B, T);
  return {seconds, val};
}

}  // namespace

int main(int argc, char** argv) {
  const auto program_start = Clock::now();
  Experiment ex("train", "Trains a TransformerLM on a Markov corpus (default) or a text file's characters.");
  // The defaults: a small model on an order-2 Markov chain over 16 tokens (256 contexts, so attention
  // to the previous token is needed), which gets within 0.15 nats of the entropy rate in under a
  // minute of one core (measured: 0.08 above the floor after 1500 steps).
  ex.model.vocab = 16, ex.model.d_model = 32, ex.model.heads = 2, ex.model.layers = 2, ex.model.seq = 32;
  ex.model.batch = 32;
  ex.add_model_flags();
  TrainOptions o;
  add_flag(ex.app, "--steps", o.steps, "total training steps (a resumed run continues up to this)");
  add_flag(ex.app, "--lr", o.lr, "peak learning rate");
  add_flag(ex.app, "--warmup", o.warmup, "linear warmup steps");
  add_flag(ex.app, "--schedule", o.schedule, "learning-rate schedule (cosine: to 0.1 lr at --steps)");
  add_optimizer_flags(ex.app, o.opt, true);
  add_flag(ex.app, "--weight-decay", o.opt.weight_decay, "L2 (sgd, adam) or decoupled (adamw) weight decay");
  add_flag(ex.app, "--clip", o.clip, "clip the global gradient norm to this");
  add_flag(ex.app, "--text", o.text, "a text file to train on, one token per distinct byte (default: Markov corpus)");
  add_flag(ex.app, "--markov-order", o.markov_order, "Markov corpus: tokens of context");
  add_flag(ex.app, "--markov-concentration", o.markov_concentration, "Markov corpus: Dirichlet concentration of each "
           "context's next-token distribution (smaller: lower entropy)");
  add_flag(ex.app, "--eval-every", o.eval_every, "steps between validation evaluations");
  add_flag(ex.app, "--eval-batches", o.eval_batches, "validation batches averaged per evaluation");
  add_flag(ex.app, "--out", o.out, "directory for train.csv (step, loss, lr, grad_norm, tokens_per_s) and eval.csv");
  add_flag(ex.app, "--save", o.save, "save a checkpoint to this directory after training");
  add_flag(ex.app, "--resume", o.resume, "resume from the checkpoint in this directory");
  add_flag(ex.app, "--dump", o.dump, "write weights, gradients, batch and loss of one fresh batch to this directory");
  add_flag(ex.app, "--sample", o.sample, "print this many generated characters after training");
  add_flag(ex.app, "--temperature", o.temperature, "sampling temperature");
  ex.dump_at_init = false;
  return ex.main(argc, argv, [&] {
    // Every output is checked before any work: nothing the program did not write is replaced.
    if (!o.out.empty()) nn::claim_output_dir(o.out, "--out", {"train", "out"});
    if (!o.save.empty()) nn::check_output_dir(o.save, "--save", {"train", "checkpoint"});
    if (!o.dump.empty()) nn::check_output_dir(o.dump, "--dump", {"train", "dump"});
    std::optional<nn::CheckpointInfo> resumed;
    nn::ModelConfig config = model_config(ex, o, resumed);
    const nlohmann::json record = data_record(o, resumed);
    nn::ModelConfig largest = config;
    if (!o.text.empty()) largest.vocab = 256;  // a text file has at most 256 distinct bytes
    ex.check_memory(largest, o.opt.optimizer == "sgd" ? 1 : 2, false, 1, corpus_bytes(config.vocab, o.markov_order, o.text));
    const Corpus corpus = load_corpus(o, config, resumed);
    const std::size_t B = ex.model.batch, T = config.context;

    nn::TransformerLM model(config);
    std::printf("model: %s\n       %zu parameters\n", nn::model_config_json(config).dump(2).c_str(),
                model.parameter_count());
    std::unique_ptr<nn::Optimizer> optimizer = o.opt.make(model);
    const nn::Schedule schedule = o.opt.with_hold({nn::parse_schedule(o.schedule), o.lr, o.warmup, o.steps, 0.1});
    std::size_t start = 0;
    if (resumed) {
      nn::load_checkpoint(*resumed, model, config, optimizer.get());  // config.json as read above
      start = resumed->step;
      std::printf("resumed: %s at step %zu\n", o.resume.c_str(), start);
    }
    std::printf("train: %zu steps of B=%zu T=%zu, %s lr %g, %s schedule, warmup %zu, clip %g, weight decay %g\n",
                o.steps, B, T, o.opt.optimizer.c_str(), o.lr, o.schedule.c_str(), o.warmup, o.clip, o.opt.weight_decay);
    if (o.opt.hold || o.opt.interventions().any() || o.opt.beta1 != 0.9 || o.opt.beta2 != 0.999 || o.opt.eps != 1e-8)
      std::printf("       %s\n", o.opt.text().c_str());
    const StepSetup setup{&corpus.data, B, T, config.seed, schedule, o.clip};
    const Trained t = train_loop(model, *optimizer, setup, start, o);
    if (!std::isnan(corpus.floor)) std::printf(", entropy-rate floor %.4f, gap %.4f nats", corpus.floor, t.val_loss - corpus.floor);
    std::printf("\n       training %.1f s, total %.1f s\n", t.seconds, seconds_since(program_start));

    if (!o.save.empty()) {
      nn::save_checkpoint(o.save, "train", model, config, std::max(start, o.steps), optimizer.get(), &record);
      std::printf("saved: %s\n", o.save.c_str());
    }
    if (!o.dump.empty()) {
      std::mt19937_64 rng = rng_for(config.seed, o.steps, RngPurpose::dump);
      dump_model(o.dump, model, corpus.data.batch(nn::Split::train, B, T, rng));
    }
    if (o.sample > 0) std::printf("sample:\n%s\n", sample(model, corpus.data, o.sample, o.temperature, config.seed).c_str());
  });
}
