#include "nn/train.hpp"

#include <cmath>

#include "engine/engine.hpp"

namespace gs::nn {

std::mt19937_64 rng_for(unsigned seed, std::size_t step, RngPurpose purpose) {
  std::seed_seq seq{seed, static_cast<unsigned>(step), static_cast<unsigned>(step >> 32), static_cast<unsigned>(purpose)};
  return std::mt19937_64(seq);
}

Batch training_batch(const Dataset& data, std::size_t batch, std::size_t seq, unsigned seed, std::size_t step) {
  std::mt19937_64 rng = rng_for(seed, step, RngPurpose::train);
  return data.batch(Split::train, batch, seq, rng);
}

double evaluate(TransformerLM& model, const Dataset& data, std::size_t batch, std::size_t seq, std::size_t batches,
                unsigned seed) {
  Tape& tape = Tape::current();
  NoGradScope no_grad(tape);
  std::mt19937_64 rng = rng_for(seed, 0, RngPurpose::eval);
  double total = 0.0;
  for (std::size_t i = 0; i < batches; ++i) {
    tape.reset();
    const Batch b = data.batch(Split::validation, batch, seq, rng);
    model.loss(b.inputs, b.targets);
    total += model.last.ce.value()();  // the cross-entropy, without the z-loss term
  }
  tape.reset();
  return total / static_cast<double>(batches);
}

double forward_backward(TransformerLM& model, const Batch& batch) {
  Tape::current().reset();
  model.zero_grad();
  const Var l = model.loss(batch.inputs, batch.targets);  // CE (+ z-loss)
  const double loss = l.value()();
  if (!std::isfinite(loss)) return loss;  // NaN/Inf: no backward pass
  l.backward();
  return model.last.ce.value()();  // the CE alone
}

Update apply_update(Optimizer& optimizer, const Schedule& schedule, std::size_t step, double clip) {
  Update u;
  u.grad_norm = clip_grad_norm(optimizer.parameters(), clip);
  u.lr = schedule.lr(step);
  if (u.taken()) optimizer.step(u.lr);  // an overflowed gradient moves nothing, and says so
  return u;
}

bool Update::taken() const { return std::isfinite(grad_norm); }

bool StepResult::finite() const { return std::isfinite(loss) && std::isfinite(grad_norm); }

StepResult train_step(TransformerLM& model, Optimizer& optimizer, const StepSetup& setup, std::size_t step) {
  return train_step(model, optimizer, setup, step, training_batch(*setup.data, setup.batch, setup.seq, setup.seed, step));
}

StepResult train_step(TransformerLM& model, Optimizer& optimizer, const StepSetup& setup, std::size_t step,
                      const Batch& batch) {
  const StepHooks& hooks = setup.hooks;
  if (hooks.before) hooks.before(step);
  StepResult r;
  r.loss = forward_backward(model, batch);
  if (!r.finite()) {  // no backward pass was taken: nothing to update
    r.grad_norm = NAN;
    r.lr = setup.schedule.lr(step);
    return r;
  }
  if (hooks.after_backward) hooks.after_backward(step, r.loss);
  const Update u = apply_update(optimizer, setup.schedule, step, setup.clip);
  r.grad_norm = u.grad_norm;
  r.lr = u.lr;
  if (u.taken() && hooks.after_update) hooks.after_update(step, u.lr);
  return r;
}

}  // namespace gs::nn
