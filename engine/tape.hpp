// The tape (a Wengert list). Every op appends one Entry, so the entries are in creation order, which
// is already a topological order: an entry's inputs always have smaller indices. backward() is one
// reverse loop over the entries; there is no recursion anywhere, not even in destruction.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "engine/array.hpp"
#include "engine/error.hpp"
#include "engine/var.hpp"

namespace gs {

struct ParameterState;
class Tape;

// Where a Var finds its tape. A Var points at its tape's slot, not at the tape: slots are never freed
// (a destroyed tape hands its slot on to the next tape made), so a Var that outlives its tape still
// reads valid memory and learns that the tape is gone, instead of reading a freed Tape.
struct TapeSlot {
  std::atomic<Tape*> tape{nullptr};                // the tape living here; null while the slot is free
  std::atomic<std::uint64_t> first_generation{0};  // that tape's generation when it was made: a Var of
                                                   // an older generation was made by an earlier tape
};

// What an op's backward receives. The tape hands the op its own output (`out`) as an argument, so no
// backward lambda ever captures its output value.
// The two lists belong to the tape's reverse sweep, which refills them for each entry.
struct BackwardArgs {
  const Array& grad;                          // dL/d(out), in out's shape
  const Array& out;                           // the op's own output value
  const std::vector<const Array*>& inputs;    // the inputs' values, in call order
  const std::vector<bool>& needs_grad;        // which inputs want a gradient

  const Array& in(std::size_t k) const { return *inputs[k]; }
  bool needs(std::size_t k) const { return needs_grad[k]; }
};

// One gradient per input. Each may have the input's shape or any shape that the input broadcast to
// in the forward pass: the tape sums it back to the input's shape (sum_to_shape, the one place where
// that happens). An input with needs(k) false may get an empty placeholder, Array{}.
// A vector of arrays that a braced list `return {dx, dw};` moves its arrays into: a plain
// std::vector's initializer list would copy every gradient once more.
struct Grads : std::vector<Array> {
  Grads() = default;
  template <class... A>
    requires(sizeof...(A) > 0 && (std::is_constructible_v<Array, A &&> && ...))
  Grads(A&&... grads) {
    reserve(sizeof...(A));
    (emplace_back(std::forward<A>(grads)), ...);
  }
};
using BackwardFn = std::function<Grads(const BackwardArgs&)>;

// One gradient that an op sent into an entry; recorded when Tape::keep_contributions is on.
struct Contribution {
  int from;     // the tape index of the op that sent it
  Array grad;   // what it sent, already summed to this entry's shape
};

struct Entry {
  const char* op = "";             // "leaf", "param", "const", "add", "matmul", ...
  std::string label;               // optional, from Var::named or the parameter's name
  std::string scope;               // the module whose forward recorded it, e.g. "blocks.3.attn" (ModuleScope)
  Site site;                       // where the user's code created this entry
  Array value = empty_array();     // (empty_array(): Array{} would allocate a 0-d array per entry)
  std::vector<int> inputs;         // tape indices, each smaller than this entry's own
  std::vector<EdgeTag> tags;       // per input, what a module marked it (Var::mark_input); empty: none
  BackwardFn backward;             // empty for leaves and for entries that need no gradient
  bool requires_grad = false;

  Array grad = empty_array();      // dL/d(value) after backward(), for every entry on a path
  bool has_grad = false;
  std::vector<GradHook> hooks;
  std::vector<Contribution> contributions;
  std::shared_ptr<ParameterState> param;  // set when this leaf stands for a Parameter
};

// A tape belongs to the thread that constructed it: using it (recording, reading an entry, backward,
// reset) from any other thread throws gs::Error. Every thread has its own Tape::current().
class Tape {
 public:
  Tape();
  ~Tape();
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  // The tape that leaves and parameters go onto: one per thread, unless a TapeScope names another.
  static Tape& current();

  Var leaf(Array value, bool requires_grad = true, Site site = Site::current());
  Var constant(Array value, Site site = Site::current());  // a leaf that never needs a gradient
  // The leaf of a parameter (Parameter::var): this generation's leaf if the parameter's value and the
  // grad mode are unchanged since it was made, else a fresh "param" entry (which it remembers).
  Var parameter_leaf(const std::shared_ptr<ParameterState>& parameter, Site site = Site::current());

  // Ops call this to append their entry. The new entry requires a gradient when grad mode is on and
  // any input requires one; otherwise its backward is dropped. The inputs come as a braced list,
  // record("add", {a, b}, ...), or, for ops with any number of inputs (concat), as a vector.
  Var record(const char* op, std::span<const Var> inputs, Array value, BackwardFn backward, Site site);
  Var record(const char* op, std::initializer_list<Var> inputs, Array value, BackwardFn backward, Site site) {
    return record(op, std::span<const Var>(inputs.begin(), inputs.size()), std::move(value), std::move(backward),
                  site);
  }

  // The reverse sweep: seeds root's gradient, then visits entries from root down to 0. At each
  // entry whose gradient is complete it runs the hooks, adds a parameter's gradient into the
  // parameter, and calls the op's backward to send gradients to the op's inputs.
  void backward(const Var& root, Site site = Site::current());
  void backward(const Var& root, const Array& seed, Site site = Site::current());

  // Drops every entry and frees their values and gradients; parameters keep theirs. The entries'
  // own storage is kept for the next step's ops. Old handles become stale.
  void reset();

  std::size_t size() const { return size_; }
  // The entry at a tape index; throws gs::Error naming the call site for an index not on the tape.
  const Entry& entry(int index, Site site = Site::current()) const {
    return entries_[checked_index(index, "Tape::entry", site)];
  }
  Entry& entry(int index, Site site = Site::current()) { return entries_[checked_index(index, "Tape::entry", site)]; }
  // The tag of the edge from entry `index`'s input number `input`: EdgeTag{} unless marked.
  EdgeTag tag(int index, std::size_t input) const;
  std::uint64_t generation() const { return generation_; }
  const TapeSlot* slot() const { return slot_; }  // what a Var points at (see TapeSlot)
  // Throws "<what> at <site>: ... another thread" unless called on the thread that made this tape.
  void check_thread(const char* what, const Site& site = Site::current()) const {
    if (owner_ != this_thread_marker()) [[unlikely]]
      refuse_other_thread(what, site);
  }

  // One line per entry: index, op, label, call site, shape, value norm, gradient norm.
  std::string listing() const;

  // The dotted module path that record() and leaf() stamp on new entries ("" outside any module).
  const std::string& scope() const { return scope_; }

  bool grad_enabled = true;        // off inside a NoGradScope: entries record values only
  bool anomaly_mode = false;       // on: the first NaN/Inf value or gradient throws
  bool keep_contributions = false; // on: every entry keeps the list of gradients summed into it
  bool accumulate_into_parameters = true;  // off: backward leaves Parameter::grad() alone (the
                                           // gradient stays readable on each "param" leaf; hvp uses it)

  // Used by Var and Parameter to turn a handle into its entry, with a clear error for a bad one.
  const Entry& checked_entry(int index, std::uint64_t generation, const char* what, const Site& site) const;
  Entry& checked_entry(int index, std::uint64_t generation, const char* what, const Site& site);

 private:
  friend class ModuleScope;
  void accumulate(int to, Array grad, int from);
  Entry& append(const char* what, const Site& site);  // the next entry, at index size()
  Var append_leaf(const char* op, Array value, bool requires_grad, const Site& site);
  // One address per live thread (a thread_local's), cheaper to read than std::this_thread::get_id().
  static const void* this_thread_marker() {
    static thread_local const char marker = 0;
    return &marker;
  }
  [[noreturn]] void refuse_other_thread(const char* what, const Site& site) const;
  // index as a size_t; throws gs::Error ("<what> at <site>: tape index i is not on the tape") unless
  // 0 <= index < size(). The one bounds check behind entry() and checked_entry().
  std::size_t checked_index(int index, const char* what, const Site& site) const;

  // A deque, not a vector: appending never moves the existing entries, so the references that
  // Var::value(), Var::grad() and entry() return stay valid while later ops are recorded.
  // The tape is entries_[0, size_). reset() empties those entries but keeps them allocated, so the
  // next step's ops reuse them instead of allocating an Entry each (they are large structs).
  std::deque<Entry> entries_;
  std::size_t size_ = 0;
  std::uint64_t generation_;
  std::string scope_;
  TapeSlot* slot_;
  const void* owner_;  // this_thread_marker() of the thread that made the tape
  // Which parameters have a leaf on the tape this generation: where, and at which value version.
  struct ParameterLeaf {
    int index;
    std::uint64_t version;
  };
  std::unordered_map<const ParameterState*, ParameterLeaf> parameter_leaves_;
};

// Names the module whose forward runs for a scope: appends ".name" to the tape's scope (just "name"
// at the top), so every entry recorded meanwhile is stamped with the module's dotted path, the same
// path its parameters have. Nested scopes nest:  ModuleScope b(tape, "blocks.3"); ModuleScope a(tape,
// "attn");  stamps "blocks.3.attn". The destructor restores the previous scope.
class ModuleScope {
 public:
  ModuleScope(Tape& tape, const std::string& name);
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  Tape& tape_;
  std::size_t previous_size_;  // the scope string's length before this scope
};

// Makes `tape` the current tape of this thread for a scope.
class TapeScope {
 public:
  explicit TapeScope(Tape& tape);
  ~TapeScope();
  TapeScope(const TapeScope&) = delete;
  TapeScope& operator=(const TapeScope&) = delete;

 private:
  Tape* previous_;
};

// Turns gradient recording off on a tape for a scope (evaluation, sampling, optimizer steps).
class NoGradScope {
 public:
  explicit NoGradScope(Tape& tape = Tape::current()) : tape_(tape), previous_(tape.grad_enabled) {
    tape_.check_thread("NoGradScope");
    tape_.grad_enabled = false;
  }
  ~NoGradScope() { tape_.grad_enabled = previous_; }
  NoGradScope(const NoGradScope&) = delete;
  NoGradScope& operator=(const NoGradScope&) = delete;

 private:
  Tape& tape_;
  bool previous_;
};

// Frobenius norm, sqrt(sum x^2): what listings and reports print.
double norm(const Array& x);

}  // namespace gs
