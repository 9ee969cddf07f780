// Optimizers: SGD with momentum, Adam and AdamW, and global-norm gradient clipping.
//
// An optimizer holds handles to the parameters it updates (module.named_parameters()) and, per
// parameter, its state "slots" (SGD: the momentum buffer; Adam: the first and second moments), plus
// the number of steps taken. All state is public through slot()/set_steps() so that checkpoints can
// save and restore it exactly. Parameters with requires_grad() false are left untouched.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/array.hpp"
#include "nn/module.hpp"

namespace gs::nn {

class Optimizer {
 public:
  Optimizer(std::vector<NamedParameter> parameters, std::vector<std::string> slot_names);
  virtual ~Optimizer() = default;

  // One update of every parameter from its current gradient, with learning rate lr.
  void step(double lr);
  void zero_grad();  // sets every parameter's gradient to 0

  virtual std::string name() const = 0;  // "sgd", "adam", "adamw": what checkpoints record
  // Every hyperparameter besides the learning rate, by name, as checkpoints record and compare them.
  virtual std::vector<std::pair<std::string, double>> hyperparameters() const = 0;

  const std::vector<NamedParameter>& parameters() const { return parameters_; }
  std::size_t steps() const { return steps_; }       // updates taken so far (t in the formulas)
  void set_steps(std::size_t steps) { steps_ = steps; }
  const std::vector<std::string>& slot_names() const { return slot_names_; }
  // Slot `s` (an index into slot_names()) of parameter `p`; same shape as the parameter, zero at start.
  Array& slot(std::size_t s, std::size_t p) { return slots_.at(s).at(p); }
  const Array& slot(std::size_t s, std::size_t p) const { return slots_.at(s).at(p); }

 protected:
  // Updates one parameter's value in place; called with steps() already counting this step.
  virtual void update(std::size_t p, Array& value, const Array& grad, double lr) = 0;

 private:
  std::vector<NamedParameter> parameters_;
  std::vector<std::string> slot_names_;
  std::vector<std::vector<Array>> slots_;  // [slot][parameter]
  std::size_t steps_ = 0;
};

// SGD with momentum (PyTorch's form, dampening 0):
//   g <- g + weight_decay * theta          (L2 regularisation through the gradient)
//   v <- momentum * v + g                  (v starts at 0)
//   theta <- theta - lr * v
// momentum 0 is plain gradient descent.
struct SgdOptions {
  double momentum = 0.9;
  double weight_decay = 0.0;
};

class Sgd : public Optimizer {
 public:
  explicit Sgd(std::vector<NamedParameter> parameters, SgdOptions options = {});
  std::string name() const override { return "sgd"; }
  std::vector<std::pair<std::string, double>> hyperparameters() const override;  // momentum, weight_decay

 private:
  void update(std::size_t p, Array& value, const Array& grad, double lr) override;
  SgdOptions options_;
};

// Adam (Kingma & Ba 2015) and AdamW (Loshchilov & Hutter 2019). At step t = 1, 2, ...:
//   Adam:   g <- g + weight_decay * theta     (L2 through the gradient, so it is rescaled below)
//   AdamW:  theta <- theta - lr * weight_decay * theta   (decoupled: not rescaled by the moments)
//   m <- beta1 * m + (1 - beta1) * g           first moment
//   v <- beta2 * v + (1 - beta2) * g^2         second moment
//   m_hat = m / (1 - beta1^t),  v_hat = v / (1 - beta2^t)    bias correction (m, v start at 0)
//   theta <- theta - lr * m_hat / (sqrt(v_hat) + eps)
struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled = false;  // true: AdamW
};

class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<NamedParameter> parameters, AdamOptions options = {});
  std::string name() const override { return options_.decoupled ? "adamw" : "adam"; }
  // beta1, beta2, eps, weight_decay
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  const AdamOptions& options() const { return options_; }

 private:
  void update(std::size_t p, Array& value, const Array& grad, double lr) override;
  AdamOptions options_;
};

// AdamW is Adam with decoupled weight decay (default 0.01, as in PyTorch).
AdamOptions adamw_options(double weight_decay = 0.01);

// "sgd", "adam" or "adamw" (anything else throws gs::Error listing them), with the given weight
// decay; the other hyperparameters at their defaults above.
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<NamedParameter> parameters,
                                          double weight_decay);

// The global gradient norm ||g|| = sqrt(sum over every parameter and element of g^2). If max_norm > 0
// and ||g|| > max_norm, every gradient is scaled by max_norm / ||g||, so the global norm becomes
// max_norm and the direction is kept. Returns the norm before clipping.
double clip_grad_norm(const std::vector<NamedParameter>& parameters, double max_norm);

}  // namespace gs::nn
