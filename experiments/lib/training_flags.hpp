// The flag groups of every binary that trains, each writing into its struct (training.hpp):
//   optimizer  --optimizer (only where `with_choice`: train has its own description), --adam-beta1
//              --adam-beta2 --adam-eps --adam-v0 --z-loss, --hold N (N steps at lr 0 before the
//              schedule; Adam's moments still move), --intervene NAME[,NAME...] (nn/interventions.hpp)
//   corpus     --text (only where `with_text`), --markov-order --markov-concentration
//   training   of --steps --eval-batches --clip --margin --window, the ones a binary names
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "experiments/lib/training.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace gs::experiments {

void add_optimizer_flags(CLI::App& app, OptimizerSetup& setup, bool with_choice);
void add_corpus_flags(CLI::App& app, nn::CorpusOptions& corpus, bool with_text);

// The numbers of a run that the binaries that train share, as flags. A binary's options derive from
// it, set their own defaults (`o.steps = 120;`) and add the flags they use.
struct TrainingOptions {
  std::size_t steps = 300;        // --steps: training steps per run
  std::size_t eval_batches = 20;  // --eval-batches: held-out batches averaged for the final loss
  double clip = 0.0;              // --clip: the global gradient norm is clipped to this; 0: no clipping
  double margin = 0.05;           // --margin: the verdicts' margin in nats (Thresholds::margin)
  std::size_t window = 10;        // --window: steps averaged per point of the loss curves

  // "" or, for a count of steps given as `flag` that is above --steps, "--window 50 is more than --steps 20".
  std::string at_most_steps(const std::string& flag, std::size_t value) const;
  // "" or, for a --warmups list with a W not below --steps, why not: such a run ends inside its warmup,
  // and its final loss would be judged (trained/stuck/diverged) before it ever trained at its rate.
  std::string warmups_below_steps(const std::vector<std::size_t>& warmups) const;
};

// Adds the flags `names` (of --steps --eval-batches --clip --margin --window), in the order given, each
// with the description above; describe() gives a binary's own meaning of one.
void add_training_flags(CLI::App& app, TrainingOptions& options, const std::vector<std::string>& names);

}  // namespace gs::experiments
