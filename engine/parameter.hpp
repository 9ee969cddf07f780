// Parameter: a leaf that outlives the tape. The tape is reset every training step; a parameter keeps
// its value and its accumulated gradient. Each step, the first op that uses a parameter puts one
// "param" leaf for it on the tape; backward() adds that leaf's gradient into the parameter.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "engine/array.hpp"
#include "engine/var.hpp"

namespace gs {

class Tape;

// What every handle to one parameter shares. Which tapes hold a leaf for it is the tapes' business
// (Tape::parameter_leaf), so that two threads, each with its own tape, can use one parameter at once.
struct ParameterState {
  std::string name;
  Array value;
  Array grad;                  // same shape as value; sums every backward() until zero_grad()
  bool requires_grad = true;
  std::uint64_t version = 0;   // bumped by every mutable access to value
  std::mutex grad_mutex;       // held while a backward pass adds into grad (or zero_grad clears it)
};

class Parameter {
 public:
  Parameter() = default;
  explicit Parameter(Array value, std::string name = "");

  const std::string& name() const { return state().name; }
  void set_name(std::string name) { state().name = std::move(name); }
  const Array& value() const { return state().value; }
  Array& value();   // for optimizers and initialisers; the next use puts a fresh leaf on the tape
  const Array& grad() const { return state().grad; }
  Array& grad() { return state().grad; }
  Shape shape() const { return shape_of(state().value); }
  std::size_t size() const { return state().value.size(); }

  bool requires_grad() const { return state().requires_grad; }
  void set_requires_grad(bool on) { state().requires_grad = on; }
  void zero_grad();

  // The parameter's leaf on the current tape, created on first use in this tape generation.
  Var var(Site site = Site::current()) const;
  // Threads: any number of threads may use one parameter at once, each on its own tape; their
  // backward passes add into grad() one at a time (grad_mutex), so no contribution is lost (their
  // order, and so the last bits of the sum, may differ between runs). Changing value() or zero_grad()
  // while another thread uses the parameter is not allowed (docs/engine.md, "Threads and lifetime").

 private:
  ParameterState& state() const;
  std::shared_ptr<ParameterState> state_;
};

}  // namespace gs
