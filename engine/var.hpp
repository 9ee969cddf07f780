// Var: the cheap handle a user holds. It names one entry of a tape (its index) and the tape's
// generation, so that a handle kept past Tape::reset() is caught instead of reading another value,
// and it reaches the tape through the tape's slot (TapeSlot, in tape.hpp), so that a handle kept past
// the tape's destruction is caught too.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "engine/array.hpp"
#include "engine/error.hpp"

namespace gs {

class Tape;
class Parameter;
struct Entry;
struct TapeSlot;

// A mark on an edge of the tape (the edge from an entry's input k into the entry), put there by the
// code that builds a model (Var::mark_input) and handed back by Tape::tag. The engine stores tags and
// never reads them: the backward pass ignores them, and what a tag means is its maker's (nn names the
// two of a residual connection, skip and branch output: nn/residual_edges.hpp). EdgeTag{} (id 0) is
// an unmarked edge.
struct EdgeTag {
  unsigned char id = 0;
  friend bool operator==(EdgeTag, EdgeTag) = default;
};

// A hook sees a variable's gradient once it is complete (every op that uses the variable has sent
// its part) and before it flows further back; it may change the gradient in place.
using GradHook = std::function<void(Array& grad)>;

class Var {
 public:
  Var() = default;  // an empty handle; using it throws
  Var(const Tape& tape, int index, std::uint64_t generation);
  // A parameter used in an op enters the current tape as a leaf (see parameter.hpp).
  Var(const Parameter& parameter, Site site = Site::current());

  const Array& value(Site site = Site::current()) const;
  // dL/d(this) after backward(); throws if this entry needs no gradient or none has reached it.
  const Array& grad(Site site = Site::current()) const;
  Shape shape(Site site = Site::current()) const;
  bool requires_grad(Site site = Site::current()) const;

  int index() const { return index_; }   // the tape index: a topological position
  std::uint64_t generation() const { return generation_; }
  // The tape this Var was recorded on; throws if the Var is empty or that tape has been destroyed.
  Tape& tape(Site site = Site::current()) const;
  const Entry& entry(Site site = Site::current()) const;  // checked: throws for a stale handle

  // Gives the entry a label that the tape listing shows; returns the same handle.
  Var named(std::string label, Site site = Site::current()) const;
  void register_hook(GradHook hook, Site site = Site::current()) const;
  // Marks the edge from this entry's input number `input` (in call order) with `tag`; returns the
  // same handle, so  Var y = (a + b).mark_input(0, tag_a).mark_input(1, tag_b);
  Var mark_input(std::size_t input, EdgeTag tag, Site site = Site::current()) const;

  // Reverse sweep from this variable: a scalar, or any shape with a seed gradient of that shape.
  void backward(Site site = Site::current()) const;
  void backward(const Array& seed, Site site = Site::current()) const;

 private:
  const TapeSlot* slot_ = nullptr;
  int index_ = -1;
  std::uint64_t generation_ = 0;
};

}  // namespace gs
