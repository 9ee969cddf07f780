// The pieces of a training run that train, warmup and dynamics share: the corpus (a Markov chain with
// a known loss floor, or a text file's characters), the per-step seeded batch stream, the held-out
// evaluation, and one training step (forward, backward, clip, optimizer update at the scheduled rate).
//
// Every random draw comes from a generator seeded by (seed, step, purpose), so the same seed gives the
// same run bit for bit, and a run resumed at step s sees exactly the batches the uninterrupted run saw.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "nn/data/dataset.hpp"
#include "nn/module.hpp"
#include "nn/optim.hpp"
#include "nn/schedule.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::explorer {
class RunRecorder;  // explorer/recorder.hpp
}

namespace gs::experiments {

// ---- random numbers ----

// What a random-number generator is for; a different purpose gives an independent sequence at the same step.
enum class RngPurpose : unsigned { train = 0, eval = 1, dump = 2, sample = 3, probe = 4 };

// The generator for one purpose at one step: the same (seed, step, purpose) always gives the same
// numbers, whatever happened before.
std::mt19937_64 rng_for(unsigned seed, std::size_t step, RngPurpose purpose);

// The training batch of step `step` (0-based): (batch, seq) windows of the training split.
nn::Batch training_batch(const nn::Dataset& data, std::size_t batch, std::size_t seq, unsigned seed, std::size_t step);

// ---- corpora ----

struct Corpus {
  std::string name;  // "markov" or the text file's path
  nn::Dataset data;
  double uniform = 0.0;       // log V: the loss of the uniform prediction, every logit equal
  double unigram = 0.0;       // H1, the entropy of the training split's token frequencies (nats):
                              // the best loss of a model that ignores the context
  double floor = 0.0;         // Markov: the chain's entropy rate, the lowest loss any model can reach;
                              // NaN for a text file (unknown)
  double window_floor = 0.0;  // Markov: the best mean loss over windows of `seq` tokens; NaN for text
};

// What a run trains on, as the corpus flags give it (add_corpus_flags, training_flags.hpp): a text
// file's characters, or (text empty) a random order-k Markov chain over the model's vocab, seeded by
// the model's seed.
struct CorpusOptions {
  std::string text;                   // --text: a text file, the last 10% held out; empty: the Markov corpus
  std::size_t order = 2;              // --markov-order: tokens of context
  double concentration = 0.05;        // --markov-concentration: Dirichlet concentration of each context's row
  double smoothing = 0.01;            // the uniform share mixed into each row (nn::MarkovOptions)
  std::size_t train_tokens = std::size_t{1} << 21;
  std::size_t validation_tokens = std::size_t{1} << 17;
};

// The one corpus builder: the text file, or the Markov chain of (vocab, seed) (nn/data/markov.hpp);
// seq sets window_floor.
Corpus build_corpus(const CorpusOptions& options, std::size_t vocab, unsigned seed, std::size_t seq);

// The bytes a corpus takes in memory: a text file's bytes and their tokens, or the Markov corpus's
// tokens and its chain's vocab^(order + 1) transition probabilities.
double corpus_bytes(const CorpusOptions& options, std::size_t vocab);

// H = -sum_v p_v log p_v of the tokens' empirical frequencies p_v, in nats.
double unigram_entropy(const nn::Tokens& tokens, std::size_t vocab);

// ---- evaluation and training ----

// The mean loss over `batches` validation batches, always the same ones for a given seed.
double evaluate(nn::TransformerLM& model, const nn::Dataset& data, std::size_t batch, std::size_t seq,
                std::size_t batches, unsigned seed);

// Resets the current tape, zeroes the gradients, runs the model's loss on `batch` and, if the loss is
// finite, its backward pass: the parameters then hold their gradients and the tape (with every
// BlockTrace handle) stays readable until the next reset. Returns the cross-entropy (the loss without
// a z-loss term; NaN/Inf when the loss was: then no backward). evaluate() is the CE too.
double forward_backward(nn::TransformerLM& model, const nn::Batch& batch);

struct Update {
  double grad_norm = 0.0;  // the global gradient norm before clipping
  double lr = 0.0;         // the rate this update used
};

// Clips the global gradient norm to `clip` (0: no clipping) and takes one optimizer step at
// schedule.lr(step).
Update apply_update(nn::Optimizer& optimizer, const nn::Schedule& schedule, std::size_t step, double clip);

// The optimizer and the backward-pass interventions of a run, as the flags --optimizer, --adam-beta1,
// --adam-beta2, --adam-eps, --hold and --intervene give them (add_optimizer_flags,
// experiments/lib/training_flags.hpp): every binary that trains makes its optimizer here, so each
// gets the flags the same way. The defaults are warmup's and dynamics' Adam(0.9, 0.98, eps 1e-8); train
// sets beta2 0.999 (make_optimizer's default) before adding the flags.
struct OptimizerSetup {
  std::string optimizer = "adam";  // sgd, adam, adamw, radam
  double beta1 = 0.9, beta2 = 0.98, eps = 1e-8;
  double weight_decay = 0.0;
  std::size_t hold = 0;                   // Schedule::hold: steps at lr 0 that still update the moments
  std::string adam_v0 = "zero";           // --adam-v0: zero, or g0sq (GI-Adam, nn::AdamOptions::v0_g0sq)
  double z_loss = 0.0;                    // --z-loss C: TransformerLM::z_loss (the loss trained; CE is reported)
  std::vector<std::string> intervene{"none"};  // nn::parse_interventions names; "none" (or empty): none

  nn::Interventions interventions() const;
  // Switches the interventions on in `model` (TransformerLM::set_interventions; throws gs::Error when
  // the model refuses them), sets its z_loss, and returns the optimizer of its parameters.
  std::unique_ptr<nn::Optimizer> make(nn::TransformerLM& model) const;
  // `schedule` with this hold; its total (the cosine's length) shortened by the hold, so a run of
  // S steps still ends its cosine at step S.
  nn::Schedule with_hold(nn::Schedule schedule) const;
  // "adam(beta1 0.9, beta2 0.98, eps 1e-08)", with ", v0 g0sq", ", hold 20" and ", intervene detach-skip" when set.
  std::string text() const;
};

// What one whole training step needs besides the model and the optimizer.
struct StepSetup {
  const nn::Dataset* data = nullptr;
  std::size_t batch = 16, seq = 32;
  unsigned seed = 0;
  nn::Schedule schedule;
  double clip = 0.0;
  explorer::RunRecorder* recorder = nullptr;  // --html: records each step's pass, update and rate (keeps contributions)
};

struct StepResult {
  double loss = 0.0;       // the training batch's loss before the update
  double grad_norm = 0.0;  // NaN when the loss was not finite (then nothing was updated)
  double lr = 0.0;
  bool finite() const;
};

// Step `step` (0-based): training_batch, forward_backward, then apply_update if the loss is finite.
// Before it starts, throws Interrupted (interrupt.hpp) if SIGINT or SIGTERM arrived.
StepResult train_step(nn::TransformerLM& model, nn::Optimizer& optimizer, const StepSetup& setup, std::size_t step);
// The same on a batch drawn by the caller (setup.data is not read).
StepResult train_step(nn::TransformerLM& model, nn::Optimizer& optimizer, const StepSetup& setup, std::size_t step,
                      const nn::Batch& batch);

// ---- verdicts ----

// How a training run ended, judged from its final held-out loss:
//   diverged  the loss is NaN/Inf, or above uniform + margin: worse than predicting every token with
//             probability 1/V
//   stuck     above stuck - margin, `stuck` being the unigram entropy H1 (<= log V): no better than a model
//             that ignores the context and predicts the token frequencies
//   trained   below stuck - margin
enum class Verdict { trained, stuck, diverged };
std::string to_string(Verdict verdict);

struct Thresholds {
  double uniform = 0.0;  // log V
  double stuck = 0.0;    // H1
  double margin = 0.05;  // nats
};

Verdict verdict_of(double final_loss, const Thresholds& thresholds);

// The verdicts of one cell's seeds: "trained", or "2 stuck, 1 trained" when they disagree; with
// " (NaN at step N)" when `first_nan_step` is not 0 (the first step at which a seed's loss was NaN/Inf).
std::string verdict_text(const std::vector<Verdict>& verdicts, std::size_t first_nan_step = 0);

}  // namespace gs::experiments
