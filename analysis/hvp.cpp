#include "analysis/hvp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "engine/tape.hpp"

namespace gs::analysis {
namespace {

double squared_norm(const Array& x) {
  double s = 0.0;
  for (double v : x) s += v * v;
  return s;
}

std::string describe(const Parameter& p, std::size_t i) {
  return "parameter " + std::to_string(i) + (p.name().empty() ? "" : " '" + p.name() + "'");
}

// Puts every parameter back to the value it had when the guard was made, bit for bit (a copy of the
// saved array, not theta + h v - h v), also when the loss throws halfway.
class RestoreValues {
 public:
  explicit RestoreValues(std::vector<Parameter>& parameters) : parameters_(parameters) {
    for (const Parameter& p : parameters_) saved_.push_back(p.value());
  }
  ~RestoreValues() {
    for (std::size_t i = 0; i < parameters_.size(); ++i) parameters_[i].value() = saved_[i];
  }
  const Array& saved(std::size_t i) const { return saved_[i]; }
  RestoreValues(const RestoreValues&) = delete;
  RestoreValues& operator=(const RestoreValues&) = delete;

 private:
  std::vector<Parameter>& parameters_;
  std::vector<Array> saved_;
};

void check_direction(const std::vector<Parameter>& parameters, const std::vector<Array>& v) {
  if (v.size() != parameters.size())
    throw Error("hvp: the direction has " + std::to_string(v.size()) + " arrays for " +
                std::to_string(parameters.size()) + " parameters (one array per parameter)");
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i].shape() != parameters[i].value().shape())
      throw Error("hvp: the direction for " + describe(parameters[i], i) + " has shape " + shape_str(shape_of(v[i])) +
                  " but the parameter has shape " + shape_str(parameters[i].shape()));
}

}  // namespace

Array join_flat(const std::vector<Array>& parts) {
  std::size_t n = 0;
  for (const Array& a : parts) n += a.size();
  Array flat = Array::from_shape({n});
  Real* out = flat.data();
  for (const Array& a : parts) out = std::copy(a.begin(), a.end(), out);
  return flat;
}

std::vector<Array> split_flat(const Array& flat, const std::vector<Parameter>& like) {
  std::size_t n = 0;
  for (const Parameter& p : like) n += p.size();
  if (flat.size() != n)
    throw Error("split_flat: a flat vector of " + std::to_string(flat.size()) + " numbers for parameters of " +
                std::to_string(n));
  std::vector<Array> parts;
  const Real* in = flat.data();
  for (const Parameter& p : like) {
    Array a = Array::from_shape(p.shape());
    std::copy(in, in + a.size(), a.begin());
    in += a.size();
    parts.push_back(std::move(a));
  }
  return parts;
}

double hvp_step(const std::vector<Parameter>& parameters, const std::vector<Array>& v, const HvpOptions& options) {
  if (options.step != 0.0) return options.step;
  double theta2 = 0.0, v2 = 0.0;
  for (const Parameter& p : parameters) theta2 += squared_norm(p.value());
  for (const Array& a : v) v2 += squared_norm(a);
  if (v2 == 0.0) return 0.0;  // H 0 = 0: no step needed
  // h |v| = cbrt(eps) * max(|theta|, 1): a relative move of cbrt(eps) ~ 6e-6 (docs/curvature.md).
  const double cbrt_eps = std::cbrt(std::numeric_limits<Real>::epsilon());
  return cbrt_eps * std::max(std::sqrt(theta2), 1.0) / std::sqrt(v2);
}

HessianVectorProduct::HessianVectorProduct(LossFunction loss, std::vector<Parameter> parameters, HvpOptions options)
    : loss_(std::move(loss)), parameters_(std::move(parameters)), options_(options) {
  if (!loss_) throw Error("hvp: no loss function given");
  if (!std::isfinite(options_.step) || options_.step < 0.0)
    throw Error("hvp: the step h = " + std::to_string(options_.step) + " must be finite and > 0 (or 0: automatic)");
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (!parameters_[i].requires_grad())
      throw Error("hvp: " + describe(parameters_[i], i) + " does not require a gradient");
    for (std::size_t j = 0; j < i; ++j)  // two handles of one parameter would move it twice
      if (&std::as_const(parameters_[j]).value() == &std::as_const(parameters_[i]).value())
        throw Error("hvp: " + describe(parameters_[i], i) + " is listed twice");
  }
  tape_.accumulate_into_parameters = false;  // read the gradients off the leaves; grad() stays untouched
}

std::size_t HessianVectorProduct::size() const {
  std::size_t n = 0;
  for (const Parameter& p : parameters_) n += p.size();
  return n;
}

std::vector<Array> HessianVectorProduct::gradient_at_current(double* loss_value) {
  tape_.reset();
  TapeScope scope(tape_);
  Var loss = loss_();
  if (&loss.tape() != &tape_)
    throw Error("hvp: the loss function built its loss on another tape; build it on Tape::current()");
  if (loss.value().size() != 1)
    throw Error("hvp: the loss has shape " + shape_str(loss.shape()) + "; it must be a scalar");
  if (loss_value) *loss_value = loss.value().data()[0];
  std::vector<Array> grads;
  if (!loss.requires_grad()) {  // depends on none of the parameters
    for (const Parameter& p : parameters_) grads.push_back(xt::zeros_like(p.value()));
    ++gradients_;
    return grads;
  }
  loss.backward();
  for (const Parameter& p : parameters_) {
    const Var leaf = p.var();  // this generation's leaf, if the loss used p (else a new, unreached one)
    grads.push_back(leaf.entry().has_grad ? leaf.grad() : Array(xt::zeros_like(p.value())));
  }
  ++gradients_;
  return grads;
}

std::vector<Array> HessianVectorProduct::gradient(double* loss_value) { return gradient_at_current(loss_value); }

std::vector<Array> HessianVectorProduct::operator()(const std::vector<Array>& v) {
  check_direction(parameters_, v);
  const double h = hvp_step(parameters_, v, options_);
  last_step_ = h;
  if (h == 0.0) {  // v = 0
    std::vector<Array> zeros;
    for (const Array& a : v) zeros.push_back(xt::zeros_like(a));
    return zeros;
  }
  std::vector<Array> plus, minus;
  {
    RestoreValues restore(parameters_);
    for (std::size_t i = 0; i < parameters_.size(); ++i) parameters_[i].value() = restore.saved(i) + h * v[i];
    plus = gradient_at_current(nullptr);  // g(theta + h v)
    for (std::size_t i = 0; i < parameters_.size(); ++i) parameters_[i].value() = restore.saved(i) - h * v[i];
    minus = gradient_at_current(nullptr);  // g(theta - h v)
  }  // theta restored, bit for bit
  tape_.reset();  // the tape's leaves held theta - h v; free them
  for (std::size_t i = 0; i < plus.size(); ++i) plus[i] = (plus[i] - minus[i]) / (2.0 * h);
  return plus;
}

std::vector<Array> hvp(const LossFunction& loss, const std::vector<Parameter>& parameters, const std::vector<Array>& v,
                       const HvpOptions& options) {
  HessianVectorProduct product(loss, parameters, options);
  return product(v);
}

}  // namespace gs::analysis
