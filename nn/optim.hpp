// Optimizers: SGD with momentum, Adam and AdamW, RAdam, and global-norm gradient clipping.
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

  // One update of every parameter from its current gradient, with learning rate lr (times that
  // parameter's lr scale).
  void step(double lr);
  // Parameter p's multiplier of lr, 1 unless set: per-group learning rates (0 freezes p's value; Adam's
  // moments still take its gradient, as in a hold). Not saved by checkpoints: a run that sets it says so.
  void set_lr_scale(std::size_t p, double scale) { lr_scale_.at(p) = scale; }
  double lr_scale(std::size_t p) const { return lr_scale_.at(p); }
  void zero_grad();  // sets every parameter's gradient to 0

  virtual std::string name() const = 0;  // "sgd", "adam", "adamw", "radam": what checkpoints record
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
  std::vector<double> lr_scale_;          // [parameter]
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
// GI-Adam (Kalra & Barkeshli 2024, v0_g0sq): the second moment starts at the first gradient's square,
// v_0 = g_1^2 (so v_1 = b2 g_1^2 + (1 - b2) g_1^2 = g_1^2), and its bias correction is dropped,
// v_hat = v: the first step is lr m_hat / (|g| + eps), the size Adam's step has anyway, but the
// preconditioner never passes through the tiny early v of a zero start. m is as above.
struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled = false;  // true: AdamW
  bool v0_g0sq = false;    // true: GI-Adam's v_0 = g^2 and v_hat = v
};

class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<NamedParameter> parameters, AdamOptions options = {});
  std::string name() const override { return options_.decoupled ? "adamw" : "adam"; }
  // beta1, beta2, eps, weight_decay, and v0_g0sq = 1 with GI-Adam (absent otherwise)
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  const AdamOptions& options() const { return options_; }
  // The diagonal preconditioner of the last step, P = sqrt(v_hat) + eps with v_hat = v / (1 - beta2^t)
  // (v_hat = v with v0_g0sq),
  // one array per parameter in parameters() order: the step was lr m_hat / P. For the curvature tools'
  // preconditioned Hessian P^-1/2 H P^-1/2 (docs/curvature.md). Throws before the first step (t = 0).
  std::vector<Array> preconditioner() const;

 private:
  void update(std::size_t p, Array& value, const Array& grad, double lr) override;
  AdamOptions options_;
};

// AdamW is Adam with decoupled weight decay (default 0.01, as in PyTorch).
AdamOptions adamw_options(double weight_decay = 0.01);

// RAdam, rectified Adam (Liu et al. 2019, "On the Variance of the Adaptive Learning Rate and Beyond",
// Algorithm 2), as PyTorch's torch.optim.RAdam computes it. With the length of the approximated
// simple moving average
//   rho_inf = 2 / (1 - beta2) - 1,    rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t),
// at step t = 1, 2, ...:
//   g <- g + weight_decay * theta      (L2, PyTorch's default; decoupled: theta <- theta (1 - lr wd))
//   m <- beta1 m + (1 - beta1) g,   v <- beta2 v + (1 - beta2) g^2,   m_hat = m / (1 - beta1^t)
//   rho_t <= 5:  theta <- theta - lr m_hat       (the variance of the adaptive rate is not yet
//                                                 tractable: momentum SGD on the bias-corrected m)
//   rho_t > 5:   r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
//                theta <- theta - lr m_hat r_t sqrt(1 - beta2^t) / (sqrt(v) + eps)
// eps is added to sqrt(v), not to sqrt(v_hat) as in Adam: PyTorch's placement. With beta2 = 0.999 the
// first five steps are unrectified (rho_5 = 4.99, rho_6 = 5.99).
// v0_g0sq (GI-Adam's start, as for Adam): v_0 = g_1^2 and the factor sqrt(1 - beta2^t) is dropped
// (v_hat = v); rho_t and r_t are unchanged.
struct RAdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // PyTorch's default
  bool decoupled = false;     // true: decoupled weight decay (PyTorch's decoupled_weight_decay)
  bool v0_g0sq = false;
};

class RAdam : public Optimizer {
 public:
  explicit RAdam(std::vector<NamedParameter> parameters, RAdamOptions options = {});
  std::string name() const override { return "radam"; }
  // beta1, beta2, eps, weight_decay
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  const RAdamOptions& options() const { return options_; }
  // rho_t and the rectification r_t of step t (r_t = 0 while rho_t <= 5: no adaptive step yet).
  static double rho(double beta2, std::size_t t);
  static double rectification(double beta2, std::size_t t);

 private:
  void update(std::size_t p, Array& value, const Array& grad, double lr) override;
  RAdamOptions options_;
};

// "sgd", "adam", "adamw" or "radam" (anything else throws gs::Error listing them), with the given
// weight decay; the other hyperparameters at their defaults above (Adam's and RAdam's beta1 0.9,
// beta2 0.999, eps 1e-8; SGD's momentum 0.9).
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<NamedParameter> parameters,
                                          double weight_decay);
// The same with Adam's hyperparameters given (for adam, adamw and radam; sgd ignores them). Throws
// gs::Error naming the value unless 0 <= beta1 < 1, 0 <= beta2 < 1 and eps > 0, all finite.
// v0_g0sq: GI-Adam's second moment (AdamOptions); refused for sgd, which has none.
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<NamedParameter> parameters,
                                          double weight_decay, double beta1, double beta2, double eps,
                                          bool v0_g0sq = false);

// The global gradient norm ||g|| = sqrt(sum over every parameter and element of g^2). If max_norm > 0
// and ||g|| > max_norm, every gradient is scaled by max_norm / ||g||, so the global norm becomes
// max_norm and the direction is kept. Returns the norm before clipping.
double clip_grad_norm(const std::vector<NamedParameter>& parameters, double max_norm);

}  // namespace gs::nn
