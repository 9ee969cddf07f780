#include "engine/parameter.hpp"

#include "engine/tape.hpp"

namespace gs {

Parameter::Parameter(Array value, std::string name) : state_(std::make_shared<ParameterState>()) {
  state_->name = std::move(name);
  state_->grad = xt::zeros_like(value);
  state_->value = std::move(value);
}

ParameterState& Parameter::state() const {
  if (!state_) throw Error("Parameter: this parameter is empty (default-constructed): give it a value first");
  return *state_;
}

Array& Parameter::value() {
  ++state().version;
  return state().value;
}

void Parameter::zero_grad() {
  ParameterState& s = state();
  std::lock_guard<std::mutex> lock(s.grad_mutex);
  s.grad.fill(0.0);
}

Var Parameter::var(Site site) const {
  state();  // throws for an empty parameter
  return Tape::current().parameter_leaf(state_, site);
}

}  // namespace gs
