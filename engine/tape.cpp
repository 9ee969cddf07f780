#include "engine/tape.hpp"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <mutex>

#include <xtensor/xnoalias.hpp>

#include "engine/broadcast.hpp"
#include "engine/parameter.hpp"

namespace gs {
namespace {

// Generations are unique across all tapes, so a handle can never match a different tape's entry.
std::atomic<std::uint64_t> next_generation{1};

thread_local Tape* current_tape = nullptr;

// The slots that Vars reach their tapes through (TapeSlot). A slot is never freed: a Var may outlive
// its tape, every other static object and its thread, and still read its slot. A destroyed tape's
// slot goes on the free list for the next tape, so there are only ever as many slots as tapes that
// lived at the same time. Taking and returning one locks the mutex: once per Tape, not per op.
struct SlotRegistry {
  std::mutex mutex;
  std::deque<TapeSlot> slots;  // a deque: adding a slot never moves the others
  std::vector<TapeSlot*> free;
};
SlotRegistry& slot_registry() {
  static SlotRegistry* registry = new SlotRegistry;  // never destroyed (see above)
  return *registry;
}

TapeSlot* take_slot(Tape* tape, std::uint64_t generation) {
  SlotRegistry& r = slot_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  TapeSlot* slot = nullptr;
  if (r.free.empty()) {
    slot = &r.slots.emplace_back();
  } else {
    slot = r.free.back();
    r.free.pop_back();
  }
  slot->first_generation.store(generation, std::memory_order_relaxed);
  slot->tape.store(tape, std::memory_order_release);
  return slot;
}

void return_slot(TapeSlot* slot) {
  slot->tape.store(nullptr, std::memory_order_release);
  SlotRegistry& r = slot_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.free.push_back(slot);
}

bool all_finite(const Array& x) {
  for (Real v : x)
    if (!std::isfinite(v)) return false;
  return true;
}

}  // namespace

double norm(const Array& x) {
  double s = 0.0;
  for (double v : x) s += v * v;
  return std::sqrt(s);
}

Tape::Tape()
    : generation_(next_generation++), slot_(take_slot(this, generation_)), owner_(this_thread_marker()) {}

Tape::~Tape() { return_slot(slot_); }

void Tape::refuse_other_thread(const char* what, const Site& site) const {
  fail(what, site, "this tape belongs to the thread that made it, and another thread used it. A tape "
                   "records one thread's computation: use Tape::current() (one per thread) or make a Tape "
                   "on the thread that uses it");
}

Tape& Tape::current() {
  if (current_tape) return *current_tape;
  thread_local Tape per_thread;
  return per_thread;
}

TapeScope::TapeScope(Tape& tape) : previous_(current_tape) { current_tape = &tape; }
TapeScope::~TapeScope() { current_tape = previous_; }

ModuleScope::ModuleScope(Tape& tape, const std::string& name) : tape_(tape), previous_size_(0) {
  tape_.check_thread("ModuleScope", Site::current());
  previous_size_ = tape_.scope_.size();
  if (!tape_.scope_.empty()) tape_.scope_ += '.';
  tape_.scope_ += name;
}
ModuleScope::~ModuleScope() { tape_.scope_.resize(previous_size_); }

Entry& Tape::append(const char* what, const Site& site) {
  check_thread(what, site);
  if (size_ == entries_.size()) entries_.emplace_back();
  return entries_[size_++];
}

std::size_t Tape::checked_index(int index, const char* what, const Site& site) const {
  check_thread(what, site);
  if (index < 0 || static_cast<std::size_t>(index) >= size_)
    fail(what, site, "tape index " + std::to_string(index) + " is not on the tape (size " + std::to_string(size_) + ")");
  return static_cast<std::size_t>(index);
}

EdgeTag Tape::tag(int index, std::size_t input) const {
  const Entry& e = entry(index);
  return input < e.tags.size() ? e.tags[input] : EdgeTag{};
}

Var Tape::append_leaf(const char* op, Array value, bool requires_grad, const Site& site) {
  if (anomaly_mode && !all_finite(value))
    fail(op, site, "anomaly mode: a leaf value of shape " + shape_str(shape_of(value)) +
                       " has NaN or Inf (it would be tape index " + std::to_string(size_) + ")");
  Entry& e = append(op, site);
  e.op = op;
  e.scope = scope_;
  e.site = site;
  e.value = std::move(value);
  e.requires_grad = requires_grad && grad_enabled;
  return Var(*this, static_cast<int>(size_ - 1), generation_);
}

Var Tape::leaf(Array value, bool requires_grad, Site site) {
  return append_leaf("leaf", std::move(value), requires_grad, site);
}

Var Tape::constant(Array value, Site site) { return append_leaf("const", std::move(value), false, site); }

Var Tape::parameter_leaf(const std::shared_ptr<ParameterState>& parameter, Site site) {
  ParameterState& p = *parameter;
  const bool wants_grad = p.requires_grad && grad_enabled;
  // Reuse this generation's leaf unless the value changed or grad mode differs since it was made.
  // (The leaf's entry holds the parameter, so no other parameter can have its address meanwhile.)
  if (auto it = parameter_leaves_.find(&p); it != parameter_leaves_.end()) {
    const ParameterLeaf& known = it->second;
    if (known.version == p.version && entries_[static_cast<std::size_t>(known.index)].requires_grad == wants_grad)
      return Var(*this, known.index, generation_);
  }
  {
    std::lock_guard<std::mutex> lock(p.grad_mutex);
    if (p.grad.shape() != p.value.shape()) p.grad = xt::zeros_like(p.value);  // the value was resized
  }
  if (anomaly_mode && !all_finite(p.value))
    fail("param", site, "anomaly mode: parameter '" + p.name + "' of shape " + shape_str(shape_of(p.value)) +
                            " has NaN or Inf in its value");
  Var leaf = append_leaf("param", p.value, wants_grad, site);
  Entry& e = entries_[static_cast<std::size_t>(leaf.index())];
  e.label = p.name;
  e.param = parameter;
  parameter_leaves_[&p] = {leaf.index(), p.version};
  return leaf;
}

const Entry& Tape::checked_entry(int index, std::uint64_t generation, const char* what, const Site& site) const {
  if (generation != generation_)
    fail(what, site, "this Var (tape index " + std::to_string(index) +
                         ") belongs to a tape that has been reset since it was made; make it again this step");
  return entries_[checked_index(index, what, site)];
}

Entry& Tape::checked_entry(int index, std::uint64_t generation, const char* what, const Site& site) {
  return const_cast<Entry&>(std::as_const(*this).checked_entry(index, generation, what, site));
}

Var Tape::record(const char* op, std::span<const Var> inputs, Array value, BackwardFn backward, Site site) {
  bool requires_grad = false;
  for (const Var& in : inputs) {
    if (&in.tape(site) != this)
      fail(op, site, "its inputs live on different tapes (use one tape per computation)");
    const Entry& input = checked_entry(in.index(), in.generation(), op, site);  // throws for stale handles
    requires_grad = requires_grad || input.requires_grad;
  }
  if (anomaly_mode && !all_finite(value))
    fail(op, site, "anomaly mode: forward value of shape " + shape_str(shape_of(value)) +
                       " has NaN or Inf (it would be tape index " + std::to_string(size_) + ")");
  Entry& e = append(op, site);
  e.op = op;
  e.scope = scope_;
  e.site = site;
  e.inputs.reserve(inputs.size());
  for (const Var& in : inputs) e.inputs.push_back(in.index());
  e.requires_grad = requires_grad && grad_enabled;
  if (e.requires_grad) e.backward = std::move(backward);
  e.value = std::move(value);
  return Var(*this, static_cast<int>(size_ - 1), generation_);
}

void Tape::backward(const Var& root, Site site) {
  const Entry& r = checked_entry(root.index(), root.generation(), "backward", site);
  if (r.value.size() != 1)
    fail("backward", site, "the root has shape " + shape_str(shape_of(r.value)) +
                               "; backward() without a seed needs a scalar (or pass a seed gradient of that shape)");
  backward(root, xt::ones_like(r.value), site);
}

void Tape::backward(const Var& root, const Array& seed, Site site) {
  const int top = root.index();
  const Entry& r = checked_entry(top, root.generation(), "backward", site);
  if (!r.requires_grad)
    fail("backward", site, "the root (tape index " + std::to_string(top) + ", op " + r.op +
                               ") does not require a gradient: no leaf it depends on has requires_grad");
  if (shape_of(seed) != shape_of(r.value))
    fail("backward", site, "the seed gradient has shape " + shape_str(shape_of(seed)) +
                               " but the root has shape " + shape_str(shape_of(r.value)));
  if (anomaly_mode && !all_finite(seed)) fail("backward", site, "anomaly mode: the seed gradient has NaN or Inf");
  for (std::size_t i = 0; i < size_; ++i) {  // drop the gradients of an earlier sweep
    entries_[i].has_grad = false;
    entries_[i].contributions.clear();
  }
  entries_[static_cast<std::size_t>(top)].grad = seed;
  entries_[static_cast<std::size_t>(top)].has_grad = true;

  std::vector<const Array*> input_values;  // what BackwardArgs lists, refilled for each entry
  std::vector<bool> input_needs_grad;
  for (int i = top; i >= 0; --i) {  // the reverse sweep: a plain loop over tape indices
    Entry& e = entries_[static_cast<std::size_t>(i)];
    if (!e.has_grad) continue;  // not on a path from the root
    // Every consumer of entry i has a larger index, so its gradient is complete here.
    for (GradHook& hook : e.hooks) {
      hook(e.grad);
      if (e.grad.shape() != e.value.shape())
        fail(e.op, e.site, "a gradient hook changed the gradient's shape to " + shape_str(shape_of(e.grad)) +
                               "; it must stay " + shape_str(shape_of(e.value)));
    }
    if (e.param && accumulate_into_parameters) {  // in place, no temporary sum; one thread at a time (Parameter: threads)
      std::lock_guard<std::mutex> lock(e.param->grad_mutex);
      xt::noalias(e.param->grad) += e.grad;
    }
    if (!e.backward) continue;

    input_values.clear();
    input_needs_grad.clear();
    for (int in : e.inputs) {
      const Entry& input = entries_[static_cast<std::size_t>(in)];
      input_values.push_back(&input.value);
      input_needs_grad.push_back(input.requires_grad);
    }
    const BackwardArgs args{e.grad, e.value, input_values, input_needs_grad};
    Grads grads = e.backward(args);
    if (grads.size() != e.inputs.size())
      fail(e.op, e.site, "backward returned " + std::to_string(grads.size()) + " gradients for " +
                             std::to_string(e.inputs.size()) + " inputs");
    for (std::size_t k = 0; k < grads.size(); ++k) {
      if (!args.needs_grad[k]) continue;
      // Returns the gradient as it is when nothing was broadcast (the common case).
      Array g = sum_to_shape(std::move(grads[k]), args.in(k).shape(), e.op, e.site);
      if (anomaly_mode && !all_finite(g))
        fail(e.op, e.site, "anomaly mode: backward of tape index " + std::to_string(i) +
                               " sent a NaN or Inf gradient to its input " + std::to_string(k) +
                               " (tape index " + std::to_string(e.inputs[k]) + ")");
      accumulate(e.inputs[k], std::move(g), i);
    }
  }
}

void Tape::accumulate(int to, Array grad, int from) {
  Entry& e = entries_[static_cast<std::size_t>(to)];
  if (keep_contributions) e.contributions.push_back({from, grad});
  if (e.has_grad) {
    xt::noalias(e.grad) += grad;  // in place (a plain += would build the sum in a temporary first)
  } else {
    e.grad = std::move(grad);
    e.has_grad = true;
  }
}

void Tape::reset() {
  check_thread("reset", Site::current());
  parameter_leaves_.clear();
  for (std::size_t i = 0; i < size_; ++i) entries_[i] = Entry{};  // frees values, gradients, backward closures
  size_ = 0;
  generation_ = next_generation++;
}

std::string Tape::listing() const {
  check_thread("listing", Site::current());
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%5s  %-13s %-20s %-22s %-16s %12s %12s\n", "index", "op", "label", "site",
                "shape", "|value|", "|grad|");
  out += line;
  for (std::size_t i = 0; i < size_; ++i) {
    const Entry& e = entries_[i];
    char grad_norm[32] = "-";
    if (e.has_grad) std::snprintf(grad_norm, sizeof grad_norm, "%.6g", norm(e.grad));
    std::snprintf(line, sizeof line, "%5zu  %-13s %-20s %-22s %-16s %12.6g %12s\n", i, e.op, e.label.c_str(),
                  site_str(e.site).c_str(), shape_str(shape_of(e.value)).c_str(), norm(e.value), grad_norm);
    out += line;
  }
  return out;
}

}  // namespace gs
