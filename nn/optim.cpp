#include "nn/optim.hpp"

#include <cmath>

#include <xtensor/xnoalias.hpp>

#include "engine/error.hpp"

namespace gs::nn {

Optimizer::Optimizer(std::vector<NamedParameter> parameters, std::vector<std::string> slot_names)
    : parameters_(std::move(parameters)), slot_names_(std::move(slot_names)), lr_scale_(parameters_.size(), 1.0) {
  slots_.resize(slot_names_.size());
  for (auto& slot : slots_)
    for (const NamedParameter& p : parameters_) slot.push_back(xt::zeros_like(p.parameter.value()));
}

void Optimizer::step(double lr) {
  ++steps_;
  for (std::size_t p = 0; p < parameters_.size(); ++p) {
    Parameter& param = parameters_[p].parameter;
    if (!param.requires_grad()) continue;
    // value() (non-const) marks the parameter changed, so its next use puts a fresh leaf on the tape.
    update(p, param.value(), param.grad(), lr * lr_scale_[p]);
  }
}

void Optimizer::zero_grad() {
  for (NamedParameter& p : parameters_) p.parameter.zero_grad();
}

Sgd::Sgd(std::vector<NamedParameter> parameters, SgdOptions options)
    : Optimizer(std::move(parameters), {"momentum"}), options_(options) {}

std::vector<std::pair<std::string, double>> Sgd::hyperparameters() const {
  return {{"momentum", options_.momentum}, {"weight_decay", options_.weight_decay}};
}

void Sgd::update(std::size_t p, Array& value, const Array& grad, double lr) {
  Array& v = slot(0, p);
  // In place (xt::noalias): each element reads only its own position, so no temporary is needed.
  if (options_.weight_decay != 0.0)
    xt::noalias(v) = options_.momentum * v + (grad + options_.weight_decay * value);  // v <- mu v + (g + wd theta)
  else
    xt::noalias(v) = options_.momentum * v + grad;                                    // v <- mu v + g
  xt::noalias(value) -= lr * v;                                                       // theta <- theta - lr v
}

Adam::Adam(std::vector<NamedParameter> parameters, AdamOptions options)
    : Optimizer(std::move(parameters), {"m", "v"}), options_(options) {}

std::vector<std::pair<std::string, double>> Adam::hyperparameters() const {
  std::vector<std::pair<std::string, double>> h = {{"beta1", options_.beta1}, {"beta2", options_.beta2},
                                                   {"eps", options_.eps}, {"weight_decay", options_.weight_decay}};
  if (options_.v0_g0sq) h.emplace_back("v0_g0sq", 1.0);  // absent for the zero start, as checkpoints had it
  return h;
}

void Adam::update(std::size_t p, Array& value, const Array& grad, double lr) {
  const AdamOptions o = options_;  // a local copy: the loop's stores cannot change it
  const double t = static_cast<double>(steps());
  const double c1 = 1.0 - std::pow(o.beta1, t);  // bias corrections
  const double c2 = o.v0_g0sq ? 1.0 : 1.0 - std::pow(o.beta2, t);  // GI-Adam: v_hat = v
  const bool first = o.v0_g0sq && steps() == 1;                     // GI-Adam: v_0 = g^2 now
  const double shrink = o.decoupled ? 1.0 - lr * o.weight_decay : 1.0;  // AdamW's decay, as a factor
  const double l2 = o.decoupled ? 0.0 : o.weight_decay;                  // Adam's decay, through g
  Real* theta = value.data();
  Real* m = slot(0, p).data();
  Real* v = slot(1, p).data();
  const Real* gr = grad.data();
  const std::size_t n = value.size();
  // One pass over the parameter's elements, the formulas of optim.hpp element by element:
  for (std::size_t i = 0; i < n; ++i) {
    theta[i] *= shrink;                                            // AdamW: theta <- theta - lr wd theta
    const double g = gr[i] + l2 * theta[i];                        // Adam:  g <- g + wd theta
    if (first) v[i] = g * g;                                       // GI-Adam: v_0 = g^2
    m[i] = o.beta1 * m[i] + (1.0 - o.beta1) * g;                   // m <- b1 m + (1 - b1) g
    v[i] = o.beta2 * v[i] + (1.0 - o.beta2) * g * g;               // v <- b2 v + (1 - b2) g^2
    theta[i] -= lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + o.eps);  // theta <- theta - lr m_hat / (sqrt(v_hat) + eps)
  }
}

std::vector<Array> Adam::preconditioner() const {
  if (steps() == 0) throw Error("Adam::preconditioner: no step taken yet, so there is no second moment (v_hat = 0 / 0)");
  const double c2 = options_.v0_g0sq ? 1.0 : 1.0 - std::pow(options_.beta2, static_cast<double>(steps()));
  std::vector<Array> P;
  for (std::size_t p = 0; p < parameters().size(); ++p) {
    Array s = slot(1, p);
    for (Real& x : s) x = std::sqrt(x / c2) + options_.eps;  // as update() computes it
    P.push_back(std::move(s));
  }
  return P;
}

AdamOptions adamw_options(double weight_decay) {
  AdamOptions o;
  o.weight_decay = weight_decay;
  o.decoupled = true;
  return o;
}

RAdam::RAdam(std::vector<NamedParameter> parameters, RAdamOptions options)
    : Optimizer(std::move(parameters), {"m", "v"}), options_(options) {}

std::vector<std::pair<std::string, double>> RAdam::hyperparameters() const {
  std::vector<std::pair<std::string, double>> h = {{"beta1", options_.beta1}, {"beta2", options_.beta2},
                                                   {"eps", options_.eps}, {"weight_decay", options_.weight_decay}};
  if (options_.v0_g0sq) h.emplace_back("v0_g0sq", 1.0);
  return h;
}

double RAdam::rho(double beta2, std::size_t t) {
  const double rho_inf = 2.0 / (1.0 - beta2) - 1.0;
  const double b2t = std::pow(beta2, static_cast<double>(t));
  return rho_inf - 2.0 * static_cast<double>(t) * b2t / (1.0 - b2t);
}

double RAdam::rectification(double beta2, std::size_t t) {
  const double rho_inf = 2.0 / (1.0 - beta2) - 1.0;
  const double rho_t = rho(beta2, t);
  if (rho_t <= 5.0) return 0.0;
  return std::sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t));
}

void RAdam::update(std::size_t p, Array& value, const Array& grad, double lr) {
  const RAdamOptions o = options_;  // a local copy: the loop's stores cannot change it
  const std::size_t step = steps();
  const double t = static_cast<double>(step);
  const double c1 = 1.0 - std::pow(o.beta1, t);  // bias corrections
  const double c2 = 1.0 - std::pow(o.beta2, t);
  const bool adaptive = rho(o.beta2, step) > 5.0;
  const double r = adaptive ? rectification(o.beta2, step) : 0.0;
  // sqrt(1 - beta2^t) / (sqrt(v) + eps) below; GI-Adam drops the correction (v_hat = v)
  const double adaptive_scale = o.v0_g0sq ? 1.0 : std::sqrt(c2);
  const bool first = o.v0_g0sq && step == 1;  // GI-Adam: v_0 = g^2 now
  const double shrink = o.decoupled ? 1.0 - lr * o.weight_decay : 1.0;
  const double l2 = o.decoupled ? 0.0 : o.weight_decay;
  Real* theta = value.data();
  Real* m = slot(0, p).data();
  Real* v = slot(1, p).data();
  const Real* gr = grad.data();
  const std::size_t n = value.size();
  for (std::size_t i = 0; i < n; ++i) {
    theta[i] *= shrink;                                 // decoupled: theta <- theta - lr wd theta
    const double g = gr[i] + l2 * theta[i];             // L2:        g <- g + wd theta
    if (first) v[i] = g * g;                            // GI-Adam:   v_0 = g^2
    m[i] = o.beta1 * m[i] + (1.0 - o.beta1) * g;        // m <- b1 m + (1 - b1) g
    v[i] = o.beta2 * v[i] + (1.0 - o.beta2) * g * g;    // v <- b2 v + (1 - b2) g^2
    const double m_hat = m[i] / c1;
    if (adaptive)
      theta[i] -= m_hat * lr * (adaptive_scale / (std::sqrt(v[i]) + o.eps)) * r;  // PyTorch's order
    else
      theta[i] -= m_hat * lr;                           // rho_t <= 5: no adaptive rate yet
  }
}

namespace {

void check_adam_hyperparameters(double beta1, double beta2, double eps) {
  auto in_unit = [](double b) { return std::isfinite(b) && b >= 0.0 && b < 1.0; };
  if (!in_unit(beta1))
    throw Error("optimizer: beta1 = " + std::to_string(beta1) + " is outside [0, 1)");
  if (!in_unit(beta2))
    throw Error("optimizer: beta2 = " + std::to_string(beta2) + " is outside [0, 1)");
  if (!std::isfinite(eps) || !(eps > 0.0))
    throw Error("optimizer: eps = " + std::to_string(eps) + " must be finite and > 0");
}

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<NamedParameter> parameters,
                                          double weight_decay) {
  const AdamOptions defaults;
  return make_optimizer(name, std::move(parameters), weight_decay, defaults.beta1, defaults.beta2, defaults.eps);
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<NamedParameter> parameters,
                                          double weight_decay, double beta1, double beta2, double eps,
                                          bool v0_g0sq) {
  if (name == "sgd" && v0_g0sq)
    throw Error("optimizer: --adam-v0 g0sq starts Adam's second moment, and sgd has none (use adam, adamw or radam)");
  if (name == "sgd") return std::make_unique<Sgd>(std::move(parameters), SgdOptions{0.9, weight_decay});
  if (name != "adam" && name != "adamw" && name != "radam")
    throw Error("optimizer: unknown optimizer '" + name + "' (valid: sgd, adam, adamw, radam)");
  check_adam_hyperparameters(beta1, beta2, eps);
  if (name == "radam") {
    RAdamOptions o;
    o.beta1 = beta1;
    o.beta2 = beta2;
    o.eps = eps;
    o.weight_decay = weight_decay;
    o.v0_g0sq = v0_g0sq;
    return std::make_unique<RAdam>(std::move(parameters), o);
  }
  AdamOptions o = name == "adamw" ? adamw_options(weight_decay) : AdamOptions{};
  o.beta1 = beta1;
  o.beta2 = beta2;
  o.eps = eps;
  o.weight_decay = weight_decay;
  o.v0_g0sq = v0_g0sq;
  return std::make_unique<Adam>(std::move(parameters), o);
}

double clip_grad_norm(const std::vector<NamedParameter>& parameters, double max_norm) {
  double sum_sq = 0.0;
  for (const NamedParameter& p : parameters)
    for (double g : p.parameter.grad()) sum_sq += g * g;
  const double total = std::sqrt(sum_sq);
  if (max_norm > 0.0 && total > max_norm) {
    const double scale = max_norm / total;
    for (NamedParameter p : parameters) p.parameter.grad() *= scale;  // a handle copy shares the gradient
  }
  return total;
}

}  // namespace gs::nn
