// The training loop, one step at a time: draw the step's batch, forward, backward, clip the gradient
// norm, one optimizer update at the scheduled rate. A run is
//
//   for (std::size_t step = 0; step < steps; ++step) {
//     const StepResult r = train_step(model, optimizer, setup, step);   // batch, pass, update
//     if (!r.finite()) break;                                           // loss or gradient blew up: no update
//   }
//   const double held_out = evaluate(model, data, batch, seq, eval_batches, seed);
//
// Every random draw comes from a generator seeded by (seed, step, purpose), so the same seed gives the
// same run bit for bit, and a run resumed at step s sees exactly the batches the uninterrupted run saw.
#pragma once

#include <cstddef>
#include <functional>
#include <random>

#include "nn/data/dataset.hpp"
#include "nn/optim.hpp"
#include "nn/schedule.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::nn {

// ---- random numbers ----

// What a random-number generator is for; a different purpose gives an independent sequence at the same step.
enum class RngPurpose : unsigned { train = 0, eval = 1, dump = 2, sample = 3, probe = 4 };

// The generator for one purpose at one step: the same (seed, step, purpose) always gives the same
// numbers, whatever happened before.
std::mt19937_64 rng_for(unsigned seed, std::size_t step, RngPurpose purpose);

// The training batch of step `step` (0-based): (batch, seq) windows of the training split.
Batch training_batch(const Dataset& data, std::size_t batch, std::size_t seq, unsigned seed, std::size_t step);

// ---- evaluation and one step ----

// The mean loss over `batches` validation batches, always the same ones for a given seed.
double evaluate(TransformerLM& model, const Dataset& data, std::size_t batch, std::size_t seq, std::size_t batches,
                unsigned seed);

// Resets the current tape, zeroes the gradients, runs the model's loss on `batch` and, if the loss is
// finite, its backward pass: the parameters then hold their gradients and the tape (with every
// BlockTrace handle) stays readable until the next reset. Returns the cross-entropy (the loss without
// a z-loss term; NaN/Inf when the loss was: then no backward). evaluate() is the CE too.
double forward_backward(TransformerLM& model, const Batch& batch);

struct Update {
  double grad_norm = 0.0;  // the global gradient norm before clipping
  double lr = 0.0;         // the rate this update used (or would have used)
  bool taken() const;      // false when grad_norm is not finite: then the weights did not move
};

// Clips the global gradient norm to `clip` (0: no clipping) and takes one optimizer step at
// schedule.lr(step). A gradient whose norm is not finite (an overflow: |g|^2 > 1e308) takes no step:
// Adam would divide by a second moment of Inf and move no weight, silently. The caller sees
// !taken() and stops the run as it would for a loss of NaN/Inf.
Update apply_update(Optimizer& optimizer, const Schedule& schedule, std::size_t step, double clip);

// What a caller adds to every step without the loop knowing of it (a stop on a signal, a recorder of
// the passes); each may be empty.
struct StepHooks {
  std::function<void(std::size_t step)> before;                       // before the pass; may throw to stop
  std::function<void(std::size_t step, double loss)> after_backward;  // finite loss: pass on the tape, gradients set
  std::function<void(std::size_t step, double lr)> after_update;      // the update of that step is taken
};

// What one whole training step needs besides the model and the optimizer.
struct StepSetup {
  const Dataset* data = nullptr;
  std::size_t batch = 16, seq = 32;
  unsigned seed = 0;
  Schedule schedule;
  double clip = 0.0;
  StepHooks hooks;
};

struct StepResult {
  double loss = 0.0;       // the training batch's loss before the update
  double grad_norm = 0.0;  // NaN when the loss was not finite (then nothing was updated)
  double lr = 0.0;
  bool finite() const;     // the loss and the gradient norm are finite: the update was taken
};

// Step `step` (0-based): hooks.before, training_batch, forward_backward, then (if the loss is finite)
// hooks.after_backward, apply_update, and (if the update was taken) hooks.after_update.
StepResult train_step(TransformerLM& model, Optimizer& optimizer, const StepSetup& setup, std::size_t step);
// The same on a batch drawn by the caller (setup.data is not read).
StepResult train_step(TransformerLM& model, Optimizer& optimizer, const StepSetup& setup, std::size_t step,
                      const Batch& batch);

}  // namespace gs::nn
