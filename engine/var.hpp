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

// The part an input plays in the op that reads it, where a module says so. A residual connection
// y = s + f(s) has two paths from s to y: the skip (identity) path, which hands the gradient back
// unchanged, and the branch f. The module that builds it marks the edges: s into the add (or into the
// first op of a scaled skip, alpha * s) and that op into the add as skip, f(s) into the add as branch_out
// (the branch's output end; tools/inspect's EdgePath::branch_in is its input end, s into the branch).
// The backward pass ignores roles; tools/inspect reads them to split a gradient into its skip and
// branch parts and to draw the two paths apart.
enum class EdgeRole : unsigned char { none, skip, branch_out };
const char* to_string(EdgeRole role);  // "none", "skip", "branch-out"

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
  // Marks the edge from this entry's input number `input` (in call order) with `role`; returns the
  // same handle, so  Var sum = (skip + f).mark_input(0, EdgeRole::skip).mark_input(1, EdgeRole::branch_out);
  Var mark_input(std::size_t input, EdgeRole role, Site site = Site::current()) const;

  // Reverse sweep from this variable: a scalar, or any shape with a seed gradient of that shape.
  void backward(Site site = Site::current()) const;
  void backward(const Array& seed, Site site = Site::current()) const;

 private:
  const TapeSlot* slot_ = nullptr;
  int index_ = -1;
  std::uint64_t generation_ = 0;
};

}  // namespace gs
