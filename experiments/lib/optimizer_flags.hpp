// The flags of OptimizerSetup (experiments/lib/training.hpp), for every binary that trains:
//   --adam-beta1 --adam-beta2 --adam-eps   Adam's and RAdam's hyperparameters
//   --hold N                               N steps at lr 0 before the schedule (Adam's moments still move)
//   --intervene NAME[,NAME...]             backward-pass interventions (nn/interventions.hpp)
//   --optimizer                            only where `with_choice` (train has its own description)
#pragma once

#include "experiments/lib/training.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace gs::experiments {

void add_optimizer_flags(CLI::App& app, OptimizerSetup& setup, bool with_choice);

}  // namespace gs::experiments
