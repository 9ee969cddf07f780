// What a run will need in memory, estimated before anything large is allocated, so that a run that
// cannot fit is refused in a moment instead of ending in std::bad_alloc after gigabytes.
//
// A training step holds: the parameters P and their gradients (P each), the optimizer's state (one P per
// slot: Adam's m and v, SGD's momentum), and the step's tape: every entry's value and, after backward,
// its gradient (and with Tape::keep_contributions each gradient an op sent). The tape is counted from
// the model's own shapes: one forward and backward pass of a proxy model, the same placement at tiny
// sizes whose every dimension is a distinct number (B 2, T 5, H 3, d/H 7, d 21, d_ff 11, V 13), so each
// entry's shape says which real dimensions it has; one and two blocks give the cost per block.
#pragma once

#include <cstddef>
#include <string>

#include "nn/config.hpp"

namespace gs::experiments {

struct Footprint {
  double parameters = 0.0;  // how many parameter values (doubles)
  double model = 0.0;       // bytes: parameters, their gradients and the optimizer's slots
  double tape = 0.0;        // bytes: one step's tape, values and gradients
  bool exact = true;        // false if some tape entry had a dimension the proxy could not map (overestimated)
  double entries = 0.0;     // how many tape entries one step records
  double total() const { return model + tape; }
};

// One model of `config` taking a step on (batch, config.context) windows.
Footprint footprint(const nn::ModelConfig& config, std::size_t batch, std::size_t optimizer_slots,
                    bool keep_contributions);

// The memory this process may still take, in bytes: the smallest of MemAvailable in /proc/meminfo, what
// remains of its address-space and data limits (RLIMIT_AS beyond VmSize, RLIMIT_DATA beyond VmData, as
// `ulimit -v` and `ulimit -d` set them), and its cgroup's memory.max beyond memory.current; with the
// name of the one that binds (infinity and "no limit could be read" if none can be read).
struct AvailableMemory {
  double bytes;
  std::string source;  // "MemAvailable in /proc/meminfo", "the address-space limit RLIMIT_AS (ulimit -v)", ...
};
AvailableMemory available_memory();

// Throws gs::Error with the estimate and `flags` (the flags that drive it) when `concurrent` models of
// `one`'s size plus `data` bytes need more than the memory available.
void check_fits(const Footprint& one, std::size_t concurrent, double data, const std::string& flags);

// Throws gs::Error when `bytes` (what `what` will hold, set by `flags`) is more than the memory available.
void check_bytes(double bytes, const std::string& what, const std::string& flags);

std::string bytes_text(double bytes);  // "1.5 GB", "17.8 MB"

}  // namespace gs::experiments
