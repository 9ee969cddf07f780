// A tiny training run for the tests of the training loop (nn/train.hpp) and of what experiments build on
// it: a 2-block model of width 8, a small Markov corpus and a warmup schedule, all seeded by 3.
#pragma once

#include <string>
#include <vector>

#include "nn/data/corpus.hpp"
#include "nn/optim.hpp"
#include "nn/train.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::test {

inline nn::ModelConfig run_config(const std::string& placement) {
  nn::ModelConfig c{.vocab = 8, .context = 8, .d_model = 8, .heads = 2, .layers = 2, .seed = 3};
  nn::apply_placement(c, placement);
  return c;
}

inline nn::Corpus tiny_corpus() {
  nn::CorpusOptions o;
  o.train_tokens = 4096;
  o.validation_tokens = 512;
  return nn::build_corpus(o, 8, 3, 8);  // vocab 8, seed 3, seq 8
}

inline nn::StepSetup tiny_setup(const nn::Corpus& corpus) {
  return nn::StepSetup{&corpus.data, 4, 8, 3, nn::Schedule{nn::ScheduleKind::warmup, 1e-2, 2, 6, 0.1}, 0.0, {}};
}

inline nn::AdamOptions adam_options() { return nn::AdamOptions{0.9, 0.98, 1e-8, 0.0, false}; }

// The losses of steps [from, to) of a run continuing with `model` and `adam`.
inline std::vector<double> losses(nn::TransformerLM& model, nn::Adam& adam, const nn::StepSetup& setup,
                                  std::size_t from, std::size_t to) {
  std::vector<double> out;
  for (std::size_t step = from; step < to; ++step) out.push_back(nn::train_step(model, adam, setup, step).loss);
  return out;
}

inline std::vector<double> fresh_run(const nn::Corpus& corpus, const std::string& placement, std::size_t steps) {
  nn::TransformerLM model(run_config(placement));
  nn::Adam adam(model.named_parameters(), adam_options());
  return losses(model, adam, tiny_setup(corpus), 0, steps);
}

}  // namespace gs::test
