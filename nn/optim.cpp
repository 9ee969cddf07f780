#include "nn/optim.hpp"

#include <cmath>

#include <xtensor/xnoalias.hpp>

#include "engine/error.hpp"

namespace gs::nn {

Optimizer::Optimizer(std::vector<NamedParameter> parameters, std::vector<std::string> slot_names)
    : parameters_(std::move(parameters)), slot_names_(std::move(slot_names)) {
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
    update(p, param.value(), param.grad(), lr);
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
  return {{"beta1", options_.beta1}, {"beta2", options_.beta2}, {"eps", options_.eps},
          {"weight_decay", options_.weight_decay}};
}

void Adam::update(std::size_t p, Array& value, const Array& grad, double lr) {
  const AdamOptions o = options_;  // a local copy: the loop's stores cannot change it
  const double t = static_cast<double>(steps());
  const double c1 = 1.0 - std::pow(o.beta1, t);  // bias corrections
  const double c2 = 1.0 - std::pow(o.beta2, t);
  const double shrink = o.decoupled ? 1.0 - lr * o.weight_decay : 1.0;  // AdamW's decay, as a factor
  const double l2 = o.decoupled ? 0.0 : o.weight_decay;                  // Adam's decay, through g
  double* theta = value.data();
  double* m = slot(0, p).data();
  double* v = slot(1, p).data();
  const double* gr = grad.data();
  const std::size_t n = value.size();
  // One pass over the parameter's elements, the formulas of optim.hpp element by element:
  for (std::size_t i = 0; i < n; ++i) {
    theta[i] *= shrink;                                            // AdamW: theta <- theta - lr wd theta
    const double g = gr[i] + l2 * theta[i];                        // Adam:  g <- g + wd theta
    m[i] = o.beta1 * m[i] + (1.0 - o.beta1) * g;                   // m <- b1 m + (1 - b1) g
    v[i] = o.beta2 * v[i] + (1.0 - o.beta2) * g * g;               // v <- b2 v + (1 - b2) g^2
    theta[i] -= lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + o.eps);  // theta <- theta - lr m_hat / (sqrt(v_hat) + eps)
  }
}

AdamOptions adamw_options(double weight_decay) {
  AdamOptions o;
  o.weight_decay = weight_decay;
  o.decoupled = true;
  return o;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<NamedParameter> parameters,
                                          double weight_decay) {
  if (name == "sgd") return std::make_unique<Sgd>(std::move(parameters), SgdOptions{0.9, weight_decay});
  if (name == "adam") {
    AdamOptions o;
    o.weight_decay = weight_decay;
    return std::make_unique<Adam>(std::move(parameters), o);
  }
  if (name == "adamw") return std::make_unique<Adam>(std::move(parameters), adamw_options(weight_decay));
  throw Error("optimizer: unknown optimizer '" + name + "' (valid: sgd, adam, adamw)");
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
