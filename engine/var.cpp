#include "engine/var.hpp"

#include "engine/parameter.hpp"
#include "engine/tape.hpp"

namespace gs {

Var::Var(const Tape& tape, int index, std::uint64_t generation)
    : slot_(tape.slot()), index_(index), generation_(generation) {}

Var::Var(const Parameter& parameter, Site site) : Var(parameter.var(site)) {}

Tape& Var::tape(Site site) const {
  if (!slot_) fail("Var", site, "this Var is empty (default-constructed): give it a value first");
  // Generations only grow, so a slot whose tape was made after this Var holds another tape.
  Tape* tape = slot_->tape.load(std::memory_order_acquire);
  if (!tape || generation_ < slot_->first_generation.load(std::memory_order_relaxed))
    fail("Var", site, "the Tape this Var (tape index " + std::to_string(index_) +
                          ") was recorded on has been destroyed; a Var can only be used while its Tape lives");
  return *tape;
}

const Entry& Var::entry(Site site) const {
  return tape(site).checked_entry(index_, generation_, "Var", site);
}

const Array& Var::value(Site site) const { return entry(site).value; }

Shape Var::shape(Site site) const { return shape_of(entry(site).value); }

bool Var::requires_grad(Site site) const { return entry(site).requires_grad; }

const Array& Var::grad(Site site) const {
  const Entry& e = entry(site);
  if (!e.requires_grad)
    fail("grad", site, std::string("tape index ") + std::to_string(index_) + " (op " + e.op +
                           ") does not require a gradient, so it has none");
  if (!e.has_grad)
    fail("grad", site, std::string("tape index ") + std::to_string(index_) + " (op " + e.op +
                           ") has no gradient: call backward() on something that depends on it first");
  return e.grad;
}

Var Var::named(std::string label, Site site) const {
  tape(site).checked_entry(index_, generation_, "named", site).label = std::move(label);
  return *this;
}

void Var::register_hook(GradHook hook, Site site) const {
  Entry& e = tape(site).checked_entry(index_, generation_, "register_hook", site);
  if (!e.requires_grad)
    fail("register_hook", site, "tape index " + std::to_string(index_) + " does not require a gradient");
  e.hooks.push_back(std::move(hook));
}

Var Var::mark_input(std::size_t input, EdgeTag tag, Site site) const {
  Entry& e = tape(site).checked_entry(index_, generation_, "mark_input", site);
  if (input >= e.inputs.size())
    fail("mark_input", site, "tape index " + std::to_string(index_) + " (op " + e.op + ") has " +
                                 std::to_string(e.inputs.size()) + " inputs, so there is no input " +
                                 std::to_string(input));
  if (e.tags.empty()) e.tags.assign(e.inputs.size(), EdgeTag{});
  e.tags[input] = tag;
  return *this;
}

void Var::backward(Site site) const { tape(site).backward(*this, site); }

void Var::backward(const Array& seed, Site site) const { tape(site).backward(*this, seed, site); }

}  // namespace gs
