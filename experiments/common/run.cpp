#include "experiments/common/run.hpp"

#include <cstdio>
#include <random>

#include "nn/data.hpp"
#include "nn/dump.hpp"

namespace gs::experiments {

void add_run_options(CLI::App& app, RunOptions& options) {
  app.add_option("--out", options.out, "directory for the CSV files and the plots (PNG and SVG)")
      ->capture_default_str();
  app.add_option("--seeds", options.seeds, "seeds to average every measurement over (mean and standard deviation)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--dump", options.dump,
                 "write weights, gradients, batch and loss of one fresh batch to this directory");
}

void dump_model(const std::string& dir, nn::TransformerLM& model, std::size_t batch, std::size_t seq, unsigned seed) {
  nn::MarkovOptions mo;
  mo.vocab = model.config.vocab;
  mo.seed = seed;
  const nn::MarkovChain chain(mo);
  const nn::Dataset data = nn::markov_dataset(chain, 4 * batch * (seq + 1) + 1024, 2 * (seq + 1), seed);
  std::mt19937_64 rng(seed);
  const nn::Batch b = data.batch(nn::Split::train, batch, seq, rng);
  const double loss = nn::write_dump(dir, model.config, model, b, [&](const IndexArray& x, const IndexArray& y) {
    return model.loss(x, y);
  });
  std::printf("dumped: %s (loss %.6f on one fresh batch)\n", dir.c_str(), loss);
}

}  // namespace gs::experiments
