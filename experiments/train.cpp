// train: trains a TransformerLM on a synthetic Markov corpus (the default: its entropy rate is the
// loss floor, printed at the start) or on the characters of any text file (--data FILE).
//
//   build/bin/train                                   defaults: within 0.15 nats of the floor
//   build/bin/train --data /usr/share/common-licenses/GPL-3 --steps 3000 --sample 400
//   build/bin/train --steps 500 --save ckpt && build/bin/train --steps 1000 --resume ckpt
//
// Every step draws its batch from an RNG seeded by (seed, step), so a resumed run sees exactly the
// batches the uninterrupted run would have seen, and ends with the same weights.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <random>

#include "engine/engine.hpp"
#include "experiments/common/graph.hpp"
#include "experiments/common/options.hpp"
#include "experiments/common/run.hpp"
#include "experiments/common/training.hpp"
#include <nlohmann/json.hpp>

#include "nn/io/checkpoint.hpp"
#include "nn/io/checksum.hpp"
#include "nn/io/config_json.hpp"
#include "nn/data/dataset.hpp"
#include "nn/io/dump.hpp"
#include "nn/io/ownership.hpp"
#include "nn/optim.hpp"
#include "nn/schedule.hpp"
#include "nn/transformer_lm.hpp"

using namespace gs;
using Clock = std::chrono::steady_clock;

namespace {

struct TrainOptions {
  std::size_t steps = 1500;
  double lr = 1e-2;
  std::size_t warmup = 100;
  std::string schedule = "cosine";
  std::string optimizer = "adamw";
  double weight_decay = 0.0;
  double clip = 1.0;                 // max global gradient norm; 0: no clipping
  std::string data;                  // a text file; empty: the Markov corpus
  std::size_t markov_order = 2;
  double markov_concentration = 0.05;
  std::size_t eval_every = 250;      // steps between validation evaluations (0: only at the end)
  std::size_t eval_batches = 40;     // validation batches averaged per evaluation
  std::string out, save, resume, dump;
  std::size_t sample = 0;
  double temperature = 1.0;
};

using experiments::evaluate;
using experiments::stream;

// n tokens sampled one at a time from softmax(logits / temperature), each conditioned on the last
// `context` tokens, starting from one token of the validation split.
std::string sample(nn::TransformerLM& model, const nn::Dataset& data, std::size_t n, double temperature,
                   unsigned seed) {
  Tape& tape = Tape::current();
  NoGradScope no_grad(tape);
  std::mt19937_64 rng = stream(seed, 0, experiments::sample_stream);
  const nn::Tokens& val = data.tokens(nn::Split::validation);
  nn::Tokens tokens{val[std::uniform_int_distribution<std::size_t>(0, val.size() - 1)(rng)]};
  const std::size_t context = model.config.context, vocab = model.config.vocab;
  for (std::size_t i = 0; i < n; ++i) {
    tape.reset();
    const std::size_t t = std::min(tokens.size(), context);
    IndexArray ids = IndexArray::from_shape({1, t});
    std::copy(tokens.end() - static_cast<std::ptrdiff_t>(t), tokens.end(), ids.begin());
    const Array& logits = model.logits(ids).value();  // (1, t, V); the last row predicts the next token
    std::vector<double> p(vocab);
    double max = -INFINITY, sum = 0.0;
    for (std::size_t v = 0; v < vocab; ++v) max = std::max(max, logits(0, t - 1, v) / temperature);
    for (std::size_t v = 0; v < vocab; ++v) sum += p[v] = std::exp(logits(0, t - 1, v) / temperature - max);
    std::discrete_distribution<std::int64_t> next(p.begin(), p.end());
    tokens.push_back(next(rng));
  }
  tape.reset();
  return data.decode(nn::Tokens(tokens.begin() + 1, tokens.end()));
}

}  // namespace

int main(int argc, char** argv) {
  const auto program_start = Clock::now();
  experiments::setup_process();

  CLI::App app{"Trains a TransformerLM on a Markov corpus (default) or a text file's characters."};
  experiments::ModelOptions model_options;
  // The defaults: a small model on an order-2 Markov chain over 16 tokens (256 contexts, so attention
  // to the previous token is needed), which gets within 0.15 nats of the entropy rate in under a
  // minute of one core (measured: 0.08 above the floor after 1500 steps).
  model_options.vocab = 16;
  model_options.d_model = 32;
  model_options.heads = 2;
  model_options.layers = 2;
  model_options.seq = 32;
  model_options.batch = 32;
  experiments::add_model_options(app, model_options);
  TrainOptions o;
  app.add_option("--steps", o.steps, "total training steps (a resumed run continues up to this)")->capture_default_str();
  app.add_option("--lr", o.lr, "peak learning rate")->capture_default_str();
  app.add_option("--warmup", o.warmup, "linear warmup steps")->capture_default_str();
  app.add_option("--schedule", o.schedule, "constant, warmup, inverse_sqrt or cosine (to 0.1 lr at --steps)")
      ->check(CLI::IsMember({"constant", "warmup", "inverse_sqrt", "inverse-sqrt", "rsqrt", "cosine"}))
      ->capture_default_str();
  app.add_option("--optimizer", o.optimizer, "sgd (momentum 0.9), adam or adamw")
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}))
      ->capture_default_str();
  app.add_option("--weight-decay", o.weight_decay, "L2 (sgd, adam) or decoupled (adamw) weight decay")
      ->capture_default_str();
  app.add_option("--clip", o.clip, "clip the global gradient norm to this (0: off)")->capture_default_str();
  app.add_option("--data", o.data, "a text file to train on, one token per distinct byte (default: Markov corpus)")
      ->check(CLI::ExistingFile);
  app.add_option("--markov-order", o.markov_order, "Markov corpus: tokens of context")->capture_default_str();
  app.add_option("--markov-concentration", o.markov_concentration,
                 "Markov corpus: Dirichlet concentration of each context's next-token distribution (smaller: "
                 "lower entropy)")
      ->capture_default_str();
  app.add_option("--eval-every", o.eval_every, "steps between validation evaluations (0: only at the end)")
      ->capture_default_str();
  app.add_option("--eval-batches", o.eval_batches, "validation batches averaged per evaluation")
      ->check(experiments::positive)
      ->capture_default_str();
  app.add_option("--out", o.out, "directory for train.csv (step, loss, lr, grad_norm, tokens_per_s) and eval.csv");
  app.add_option("--save", o.save, "save a checkpoint to this directory after training");
  app.add_option("--resume", o.resume, "resume from the checkpoint in this directory")->check(CLI::ExistingDirectory);
  app.add_option("--dump", o.dump, "write weights, gradients, batch and loss of one fresh batch to this directory");
  app.add_option("--sample", o.sample, "print this many generated characters after training")->capture_default_str();
  app.add_option("--temperature", o.temperature, "sampling temperature")->capture_default_str();
  std::string graph;
  experiments::add_graph_option(app, graph);
  experiments::finish_cli(app);
  CLI11_PARSE(app, argc, argv);

  try {
    if (!graph.empty()) {  // --graph: one forward and backward pass drawn, instead of the run
      experiments::write_model_graph(graph, model_options);
      return 0;
    }
    // Every output is checked before any work: nothing the program did not write is replaced.
    if (!o.out.empty()) nn::claim_output_dir(o.out, "--out", {"train", "out"});
    if (!o.save.empty()) nn::check_output_dir(o.save, "--save", {"train", "checkpoint"});
    if (!o.dump.empty()) nn::check_output_dir(o.dump, "--dump", {"train", "dump"});
    // The model's shape: from the flags, or from the checkpoint being resumed.
    nn::ModelConfig config = model_options.config();
    std::optional<nn::CheckpointInfo> resumed;
    if (!o.resume.empty()) {
      resumed = nn::read_checkpoint_info(o.resume);
      const std::vector<std::string> given = experiments::model_flags_given(app);
      if (!given.empty()) {
        nn::ModelConfig flags = config;
        if (!o.data.empty()) flags.vocab = resumed->config.vocab;  // a text file sets the vocab below
        std::string d = nn::architecture_difference(resumed->config, flags);
        if (d.empty() && app.get_option("--seed")->count() && flags.seed != resumed->config.seed)
          d = "seed is " + std::to_string(resumed->config.seed) + " in one and " + std::to_string(flags.seed) +
              " in the other";
        if (!d.empty())
          throw Error("--resume " + o.resume + ": the model flags disagree with the checkpoint: " + d +
                      " (checkpoint, flags)");
      }
      config = resumed->config;  // its seed too: the data and the batches are drawn from it
    }
    const std::size_t B = model_options.batch, T = config.context;
    const unsigned seed = config.seed;

    // What the data is, recorded in checkpoints; a resumed run must train on the same.
    nlohmann::json record = {{"data", o.data.empty() ? "markov" : o.data}};
    if (o.data.empty()) {
      record["markov_order"] = o.markov_order;
      record["markov_concentration"] = o.markov_concentration;
    }

    // The data.
    experiments::MarkovCorpusOptions mo;
    mo.vocab = config.vocab;
    mo.order = o.markov_order;
    mo.concentration = o.markov_concentration;
    mo.seed = seed;
    const experiments::Corpus corpus =
        o.data.empty() ? experiments::markov_corpus(mo, T) : experiments::text_corpus(o.data);
    const nn::Dataset* data = &corpus.data;
    const double floor = corpus.floor;  // NaN for a text file
    if (!o.data.empty()) {
      std::printf("data: %s, %zu training and %zu validation characters, vocab %zu\n", o.data.c_str(),
                  data->tokens(nn::Split::train).size(), data->tokens(nn::Split::validation).size(), data->vocab());
      if (resumed && resumed->config.vocab != data->vocab())
        throw Error("--data " + o.data + " has vocab " + std::to_string(data->vocab()) + ", the checkpoint " +
                    std::to_string(resumed->config.vocab));
      config.vocab = data->vocab();
      record["data_sha256"] = nn::sha256_of_file(o.data);  // the same name must also be the same bytes
    } else {
      std::printf("data: Markov chain, vocab %zu, order %zu, concentration %g, seed %u\n", mo.vocab, mo.order,
                  mo.concentration, seed);
      std::printf("      entropy rate (the loss floor) %.4f nats/token; log V = %.4f; best mean loss over "
                  "windows of %zu: %.4f\n",
                  floor, corpus.uniform, T, corpus.window_floor);
    }

    if (resumed) {
      const nn::JsonField saved = resumed->train();
      for (const auto& [key, now] : record.items())
        if (saved.has(key) && saved.at(key).json() != now)
          throw Error("--resume " + o.resume + ": the checkpoint was trained with " + key + " " +
                      saved.at(key).json().dump() + ", this run asks for " + now.dump());
    }

    // The model, optimizer and schedule.
    nn::TransformerLM model(config);
    std::printf("model: %s\n       %zu parameters\n", nn::model_config_json(config).dump(2).c_str(),
                model.parameter_count());
    const std::vector<nn::NamedParameter> params = model.named_parameters();
    std::unique_ptr<nn::Optimizer> optimizer = nn::make_optimizer(o.optimizer, params, o.weight_decay);
    const nn::Schedule schedule{nn::parse_schedule(o.schedule), o.lr, o.warmup, o.steps, 0.1};
    std::size_t start = 0;
    if (resumed) {
      nn::load_checkpoint(*resumed, model, config, optimizer.get());  // config.json as read above
      start = resumed->step;
      std::printf("resumed: %s at step %zu\n", o.resume.c_str(), start);
    }
    std::printf("train: %zu steps of B=%zu T=%zu, %s lr %g, %s schedule, warmup %zu, clip %g, weight decay %g\n",
                o.steps, B, T, o.optimizer.c_str(), o.lr, o.schedule.c_str(), o.warmup, o.clip, o.weight_decay);

    std::unique_ptr<experiments::CsvWriter> train_csv, eval_csv;
    if (!o.out.empty()) {
      train_csv = std::make_unique<experiments::CsvWriter>(
          std::filesystem::path(o.out) / "train.csv",
          std::vector<std::string>{"step", "loss", "lr", "grad_norm", "tokens_per_s"});
      eval_csv = std::make_unique<experiments::CsvWriter>(std::filesystem::path(o.out) / "eval.csv",
                                                          std::vector<std::string>{"step", "val_loss"});
      if (resumed) {  // continue the resumed run's files
        train_csv->keep_existing_rows(static_cast<double>(start));
        eval_csv->keep_existing_rows(static_cast<double>(start));
      }
    }

    // The loop: batch, forward, backward, clip, update.
    Tape& tape = Tape::current();
    experiments::ProgressBar progress(o.steps);
    const auto train_start = Clock::now();
    double loss = NAN, stepping_seconds = 0.0;
    const experiments::StepSetup setup{data, B, T, seed, schedule, o.clip};
    for (std::size_t step = start; step < o.steps; ++step) {
      const auto step_start = Clock::now();
      const experiments::StepResult r = experiments::train_step(model, *optimizer, setup, step);
      loss = r.loss;
      if (!r.finite()) throw Error("the loss is " + std::to_string(loss) + " at step " + std::to_string(step));
      const double grad_norm = r.grad_norm, lr = r.lr;

      const double step_seconds = experiments::seconds_since(step_start);
      stepping_seconds += step_seconds;  // excludes evaluations
      const double tokens_per_s = static_cast<double>(B * T) / step_seconds;
      const double mean_tokens_per_s = static_cast<double>((step + 1 - start) * B * T) / stepping_seconds;
      progress.update(step + 1, loss, lr, grad_norm, mean_tokens_per_s);
      if (train_csv) train_csv->row({static_cast<double>(step + 1), loss, lr, grad_norm, tokens_per_s});
      if (o.eval_every && (step + 1) % o.eval_every == 0 && step + 1 < o.steps) {
        const double val = evaluate(model, *data, B, T, o.eval_batches, seed);
        progress.finish();
        std::printf("step %zu: validation loss %.4f\n", step + 1, val);
        std::fflush(stdout);
        if (eval_csv) eval_csv->row({static_cast<double>(step + 1), val});
      }
    }
    progress.finish();
    tape.reset();
    const double train_seconds = experiments::seconds_since(train_start);

    // The result: validation loss averaged over eval_batches batches, against the floor.
    const double val = evaluate(model, *data, B, T, o.eval_batches, seed);
    if (eval_csv) eval_csv->row({static_cast<double>(o.steps), val});
    std::printf("final: validation loss %.4f (mean of %zu batches of %zux%zu)", val, o.eval_batches, B, T);
    if (!std::isnan(floor)) std::printf(", entropy-rate floor %.4f, gap %.4f nats", floor, val - floor);
    std::printf("\n       training %.1f s, total %.1f s\n", train_seconds, experiments::seconds_since(program_start));

    if (!o.save.empty()) {
      nn::save_checkpoint(o.save, "train", model, config, std::max(start, o.steps), optimizer.get(), &record);
      std::printf("saved: %s\n", o.save.c_str());
    }
    if (!o.dump.empty()) {
      std::mt19937_64 rng = stream(seed, o.steps, experiments::dump_stream);
      const nn::Batch batch = data->batch(nn::Split::train, B, T, rng);
      const double dumped = nn::write_dump(o.dump, "train", config, model, batch,  // never half a dump
                                           [&](const IndexArray& x, const IndexArray& y) { return model.loss(x, y); });
      std::printf("dumped: %s (loss %.6f on one fresh batch)\n", o.dump.c_str(), dumped);
    }
    if (o.sample > 0) std::printf("sample:\n%s\n", sample(model, *data, o.sample, o.temperature, seed).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
