// Learning-rate sensitivity (Wortsman et al. 2023, "Small-scale proxies for large-scale Transformer
// training instabilities", section 3.1): how much worse than its best a recipe ends, on average over a
// sweep of learning rates, with a run that ends above its starting loss counted at the starting loss:
//   LR sensitivity = mean over lrs of min(L(lr), L0) - min over lrs of L(lr)
// L(lr) the final loss at lr, L0 the loss at initialization. A final loss that is NaN/Inf (diverged)
// counts as L0. 0: every lr reaches the best loss; L0 - best: no lr but the best learns anything.
#pragma once

#include <vector>

namespace gs::analysis {

// final_losses[i] is L(lr_i) (NaN/Inf allowed), init_loss L0. NaN when no final loss is finite.
double lr_sensitivity(const std::vector<double>& final_losses, double init_loss);

}  // namespace gs::analysis
