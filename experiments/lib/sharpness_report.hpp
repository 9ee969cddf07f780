// sharpness's grid options and its report (experiments/sharpness.cpp measures; this prints and draws):
// the tables of the whole model in the SGD view (lr_s * lambda_max(H) vs 2) and the Adam view
// (lr_s * lambda_max(P^-1/2 H P^-1/2) vs 38), the per-block table, the Lanczos convergence line,
// sharpness.csv (a row per run x measured step x scope), the summary CSVs and the plots.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/eigen.hpp"
#include "analysis/curvature.hpp"
#include "experiments/lib/grid.hpp"

namespace gs::experiments {

constexpr double adam_beta1 = 0.9;  // the warmup grid's Adam(0.9, 0.98, 1e-8)

struct SharpnessOptions {
  std::vector<double> lrs = {1e-3, 1e-2};
  std::vector<std::size_t> warmups = {0, 50};
  std::size_t steps = 120;
  std::size_t every = 30;  // 5 measurements of 120 steps: the budget of a few minutes on 2 cores
  std::size_t eval_batches = 10;
  double margin = 0.05;
  analysis::LanczosOptions lanczos{1, 20, 1e-3, 1};
};

inline std::vector<std::size_t> measured_steps(const SharpnessOptions& go) {  // 0, every, 2 every, ... <= steps
  std::vector<std::size_t> s;
  for (std::size_t k = 0; k <= go.steps; k += go.every) s.push_back(k);
  return s;
}
// The cells of a sharpness grid (axes placement, warmup, lr, seed) and what each measured: "steps",
// "lr", "loss", per scope j "H<j>", "P<j>", "H<j>.res", "P<j>.res", and "final_loss", "blew_up",
// "verdict" (experiments/sharpness.cpp).
void report_sharpness(const Results& results, const std::vector<std::string>& placements, const SharpnessOptions& go,
                      const std::vector<analysis::CurvatureScope>& scopes, const std::vector<unsigned>& seeds,
                      const std::filesystem::path& dir);

}  // namespace gs::experiments
