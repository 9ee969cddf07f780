// sharpness's grid options and its report (experiments/sharpness.cpp measures; this prints and draws):
// the tables of the whole model in the SGD view (lr_s * lambda_max(H) vs 2) and the Adam view
// (lr_s * lambda_max(P^-1/2 H P^-1/2) vs 38), the per-block table, the Lanczos convergence line,
// sharpness.csv (a row per run x measured step x scope), the summary CSVs and the plots.
#pragma once

#include <cmath>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/eigen.hpp"
#include "analysis/curvature.hpp"
#include "experiments/lib/grid.hpp"
#include "experiments/lib/training.hpp"
#include "experiments/lib/training_flags.hpp"

namespace gs::experiments {

constexpr double adam_beta1 = 0.9;  // the warmup grid's Adam(0.9, 0.98, 1e-8)

struct SharpnessOptions : TrainingOptions {  // --steps 120 --eval-batches 10 --margin 0.05
  SharpnessOptions() { steps = 120, eval_batches = 10; }
  std::vector<double> lrs = {1e-3, 1e-2};
  std::vector<std::size_t> warmups = {0, 50};
  std::size_t every = 30;  // 5 measurements of 120 steps: the budget of a few minutes on 2 cores
  nn::CorpusOptions corpus;  // the Markov corpus only (--markov-order, --markov-concentration)
  analysis::LanczosOptions lanczos{1, 20, 1e-3, 1};
};

inline std::vector<std::size_t> measured_steps(const SharpnessOptions& go) {  // 0, every, 2 every, ... <= steps
  std::vector<std::size_t> s;
  for (std::size_t k = 0; k <= go.steps; k += go.every) s.push_back(k);
  return s;
}
// What one run of the grid measured (experiments/sharpness.cpp), at each measured step k: the updates
// taken, lr_s, the measurement batch's loss, and per scope j (0 = the model, 1 + i = block i) lambda_max
// of H and of P^-1/2 H P^-1/2 with its residual |A y - lambda y| / |lambda| (converged when <= --tolerance).
// A run that blew up is measured no further; lambda_P at step 0 is missing when the first step blew up.
struct SharpnessRun {
  std::vector<double> steps, lr, loss;                  // [k]
  std::vector<std::vector<double>> H, H_res, P, P_res;  // [j][k]
  double final_loss = NAN;                              // held out, after the last step
  std::size_t blew_up = 0;                              // the 1-based step whose training loss was NaN/Inf, 0: none
  Verdict verdict = Verdict::diverged;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SharpnessRun, steps, lr, loss, H, H_res, P, P_res, final_loss, blew_up, verdict)

// The tables, CSVs and plots of every run of a grid with the axes placement, warmup, lr, seed.
void report_sharpness(const std::vector<SharpnessRun>& runs, const Grid& grid, const SharpnessOptions& go,
                      const std::vector<analysis::CurvatureScope>& scopes, const std::vector<unsigned>& seeds,
                      const std::filesystem::path& dir);

}  // namespace gs::experiments
