// Learning-rate schedules. lr(step) is the rate for update number step + 1, step = 0, 1, 2, ...;
// write t = step + 1 (the count of updates including this one), W = warmup, N = total steps:
//   constant      lr = base
//   warmup        lr = base * t / W for t <= W, then base                  (linear warmup, constant)
//   inverse_sqrt  lr = base * t / W for t <= W, then base * sqrt(W / t)   (the Transformer paper's)
//   cosine        lr = base * t / W for t <= W, then, with progress p = (t - W) / (N - W) in (0, 1],
//                 lr = base * (f + (1 - f) * (1 + cos(pi p)) / 2)          decaying to f * base at t = N
//                 (f = final_fraction; past N it stays at f * base)
// The warmup starts at base / W rather than 0, so the first update already moves the weights; all
// three join their warmup continuously at t = W. With W = 0 there is no warmup (inverse_sqrt then
// decays as base / sqrt(t)).
//
// A hold of H steps comes before all of it: lr(step) = 0 for step < H, so those steps compute their
// gradients and the optimizer updates its state (Adam's moments, its step count t) but no weight
// moves (AdamW's decoupled decay, lr * wd * theta, is 0 too); then the schedule runs as if from step 0:
// lr(step) = plain lr(step - H), its warmup starting after the hold. `total` is the length of the
// schedule after the hold: a run of S steps whose cosine should end at its last step sets
// total = S - H. (Liu et al. 2019 propose such a hold to let Adam's second moment settle before the
// first step; it tests "Adam's early variance" apart from warmup.)
#pragma once

#include <cstddef>
#include <string>

namespace gs::nn {

enum class ScheduleKind { constant, warmup, inverse_sqrt, cosine };

std::string to_string(ScheduleKind kind);
// "constant", "warmup", "inverse_sqrt" (or "inverse-sqrt", "rsqrt"), "cosine"; anything else throws
// gs::Error listing the valid names.
ScheduleKind parse_schedule(const std::string& name);

struct Schedule {
  ScheduleKind kind = ScheduleKind::constant;
  double base_lr = 1e-3;
  std::size_t warmup = 0;        // W
  std::size_t total = 0;         // N, the cosine schedule's length, counted after the hold
  double final_fraction = 0.1;   // f, where the cosine schedule ends
  std::size_t hold = 0;          // H: steps at lr 0 before the schedule starts

  double lr(std::size_t step) const;
};

}  // namespace gs::nn
