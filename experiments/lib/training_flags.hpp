// The flag groups of every binary that trains, each writing into its struct (training.hpp):
//   optimizer  --optimizer (only where `with_choice`: train has its own description), --adam-beta1
//              --adam-beta2 --adam-eps --adam-v0 --z-loss, --hold N (N steps at lr 0 before the
//              schedule; Adam's moments still move), --intervene NAME[,NAME...] (nn/interventions.hpp)
//   corpus     --text (only where `with_text`), --markov-order --markov-concentration
#pragma once

#include "experiments/lib/training.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace gs::experiments {

void add_optimizer_flags(CLI::App& app, OptimizerSetup& setup, bool with_choice);
void add_corpus_flags(CLI::App& app, nn::CorpusOptions& corpus, bool with_text);

}  // namespace gs::experiments
