// Parameter: a leaf that outlives the tape. The tape is reset every training step; a parameter keeps
// its value and its accumulated gradient. Each step, the first op that uses a parameter puts one
// "param" leaf for it on the tape; backward() adds that leaf's gradient into the parameter.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/array.hpp"
#include "engine/var.hpp"

namespace gs {

class Tape;

struct ParameterState {
  std::string name;
  Array value;
  Array grad;                  // same shape as value; sums every backward() until zero_grad()
  bool requires_grad = true;
  std::uint64_t version = 0;   // bumped by every mutable access to value

  // Where this parameter's leaf is on a tape, so that one step uses one leaf.
  const Tape* tape = nullptr;
  std::uint64_t generation = 0;
  std::uint64_t leaf_version = 0;
  int index = -1;
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

 private:
  ParameterState& state() const;
  std::shared_ptr<ParameterState> state_;
};

}  // namespace gs
