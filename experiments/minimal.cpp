// minimal: start here. Post-LN and Pre-LN trained side by side in one plain main(), with no harness
// and no flags: the model, corpus and optimizer of docs/why-pre-ln.md (6 blocks, d 32, 2 heads, an
// order-2 Markov chain over 16 tokens, Adam at a constant 1e-2, batches of 16 windows of 16 tokens).
// Every 50 steps it prints each run's training loss and the gradient norm of each block's parameters,
// block 0 (next to the embedding) first; at the end, the held-out loss beside H1, the loss of the best
// prediction that ignores the context (the tokens' frequencies).
//
//   build/bin/minimal
//
// The real experiments (warmup.cpp, causes.cpp) run the same loop (nn/train.hpp) over grids of seeds,
// rates and interventions, and add tables, CSV files and plots.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/step_measures.hpp"
#include "nn/data/corpus.hpp"
#include "nn/optim.hpp"
#include "nn/train.hpp"
#include "nn/transformer_lm.hpp"

using namespace gs;

int main() {
  nn::ModelConfig config;
  config.vocab = 16, config.layers = 6, config.d_model = 32, config.heads = 2, config.context = 16;
  const std::size_t batch = 16, seq = 16, steps = 300;
  const unsigned seed = 0;
  const nn::Corpus corpus = nn::build_corpus(nn::CorpusOptions{}, config.vocab, seed, seq);
  std::printf("corpus: order-2 Markov chain over %zu tokens; H1 (unigram entropy) %.3f nats, uniform %.3f\n",
              config.vocab, corpus.unigram, corpus.uniform);

  for (const char* placement : {"post", "pre"}) {
    nn::apply_placement(config, placement);
    nn::TransformerLM model(config);
    nn::Adam adam(model.named_parameters(), {.beta1 = 0.9, .beta2 = 0.98});
    nn::StepSetup setup;
    setup.data = &corpus.data, setup.batch = batch, setup.seq = seq, setup.seed = seed;
    setup.schedule = {nn::ScheduleKind::constant, 1e-2};

    std::printf("\n%s-LN\n  step   loss   |dL/dW| of blocks 0..%zu\n", placement, config.layers - 1);
    for (std::size_t step = 0; step < steps; ++step) {
      const nn::StepResult r = nn::train_step(model, adam, setup, step);  // batch, forward, backward, update
      if (!r.finite()) {
        std::printf("  step %zu: the loss or the gradient is not finite; stopping\n", step);
        break;
      }
      if (step % 50 != 0 && step + 1 != steps) continue;
      std::printf("  %4zu  %6.3f ", step, r.loss);
      // |dL/dW| of the embedding, of each block (all its parameters together), of the head: print the blocks'
      const std::vector<double> g = analysis::layer_grad_norms(model);
      for (std::size_t block = 1; block <= config.layers; ++block) std::printf("  %.2e", g[block]);
      std::printf("\n");
    }
    const double held_out = nn::evaluate(model, corpus.data, batch, seq, 20, seed);
    std::printf("  held-out loss %.3f (H1 %.3f)\n", held_out, corpus.unigram);
  }
}
