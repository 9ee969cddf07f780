#include "analysis/lr_sensitivity.hpp"

#include <algorithm>
#include <cmath>

namespace gs::analysis {

double lr_sensitivity(const std::vector<double>& final_losses, double init_loss) {
  double best = INFINITY, sum = 0.0;
  for (double L : final_losses) {
    const double clipped = std::isfinite(L) ? std::min(L, init_loss) : init_loss;  // min(L(lr), L0)
    sum += clipped;
    if (std::isfinite(L)) best = std::min(best, L);
  }
  if (!std::isfinite(best)) return NAN;
  return sum / static_cast<double>(final_losses.size()) - best;
}

}  // namespace gs::analysis
