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

void Parameter::zero_grad() { state().grad.fill(0.0); }

Var Parameter::var(Site site) const {
  ParameterState& s = state();
  Tape& tape = Tape::current();
  const bool wants_grad = s.requires_grad && tape.grad_enabled;
  // Reuse this step's leaf unless the value changed or grad mode differs since it was made.
  if (s.tape == &tape && s.generation == tape.generation() && s.leaf_version == s.version &&
      tape.entry(s.index).requires_grad == wants_grad)
    return Var(&tape, s.index, s.generation);
  if (shape_of(s.grad) != shape_of(s.value)) s.grad = xt::zeros_like(s.value);  // value was resized
  Var leaf = tape.leaf(s.value, wants_grad, site);
  Entry& e = tape.entry(leaf.index());
  e.op = "param";
  e.label = s.name;
  e.param = state_;
  s.tape = &tape;
  s.generation = tape.generation();
  s.leaf_version = s.version;
  s.index = leaf.index();
  return leaf;
}

}  // namespace gs
