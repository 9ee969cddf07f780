#include "nn/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "engine/error.hpp"

namespace gs::nn {

std::string to_string(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::constant: return "constant";
    case ScheduleKind::warmup: return "warmup";
    case ScheduleKind::inverse_sqrt: return "inverse_sqrt";
    case ScheduleKind::cosine: return "cosine";
  }
  return "?";
}

ScheduleKind parse_schedule(const std::string& name) {
  if (name == "constant") return ScheduleKind::constant;
  if (name == "warmup") return ScheduleKind::warmup;
  if (name == "inverse_sqrt" || name == "inverse-sqrt" || name == "rsqrt") return ScheduleKind::inverse_sqrt;
  if (name == "cosine") return ScheduleKind::cosine;
  throw Error("schedule: unknown schedule '" + name + "' (valid: constant, warmup, inverse_sqrt, cosine)");
}

double Schedule::lr(std::size_t step) const {
  if (step < hold) return 0.0;  // the hold: gradients and optimizer state only
  step -= hold;                 // the schedule starts after it, as if at step 0
  const double t = static_cast<double>(step) + 1.0;
  const double w = static_cast<double>(warmup);
  if (kind == ScheduleKind::constant) return base_lr;
  if (t <= w) return base_lr * t / w;  // linear warmup
  switch (kind) {
    case ScheduleKind::warmup: return base_lr;
    case ScheduleKind::inverse_sqrt: return base_lr * std::sqrt(std::max(w, 1.0) / t);
    case ScheduleKind::cosine: {
      const double span = static_cast<double>(total) - w;
      const double p = span > 0.0 ? std::min((t - w) / span, 1.0) : 1.0;
      return base_lr * (final_fraction + (1.0 - final_fraction) * 0.5 * (1.0 + std::cos(std::numbers::pi * p)));
    }
    case ScheduleKind::constant: break;
  }
  return base_lr;
}

}  // namespace gs::nn
