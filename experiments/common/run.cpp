#include "experiments/common/run.hpp"

#include <malloc.h>

#include <cstdio>
#include <random>

#include "nn/io/ownership.hpp"
#include "nn/data/markov.hpp"
#include "nn/io/dump.hpp"

extern "C" void openblas_set_num_threads(int);

namespace gs::experiments {

void setup_process() {
  openblas_set_num_threads(1);
  mallopt(M_MMAP_THRESHOLD, 256 << 20);  // no mmap (and munmap) for blocks under 256 MiB
  mallopt(M_TRIM_THRESHOLD, 1 << 30);    // no trimming of the heap's top below 1 GiB
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void add_run_options(CLI::App& app, RunOptions& options) {
  app.add_option("--out", options.out, "directory for the CSV files and the plots (PNG and SVG)")
      ->capture_default_str();
  app.add_option("--seeds", options.seeds, "seeds to average every measurement over (mean and standard deviation)")
      ->check(experiments::positive)
      ->capture_default_str();
  app.add_option("--dump", options.dump,
                 "write weights, gradients, batch and loss of one fresh batch to this directory");
}

nn::Dataset dump_corpus(std::size_t vocab, std::size_t batch, std::size_t seq, unsigned seed) {
  nn::MarkovOptions mo;
  mo.vocab = vocab;
  mo.seed = seed;
  const nn::MarkovChain chain(mo);
  return nn::markov_dataset(chain, 4 * batch * (seq + 1) + 1024, 2 * (seq + 1), seed);
}

void dump_model(const std::string& dir, nn::TransformerLM& model, std::size_t batch, std::size_t seq, unsigned seed) {
  const nn::Dataset data = dump_corpus(model.config.vocab, batch, seq, seed);
  std::mt19937_64 rng(seed);
  const nn::Batch b = data.batch(nn::Split::train, batch, seq, rng);
  const double loss = nn::write_dump(dir, nn::this_program(), model.config, model, b,  // never half a dump
                                     [&](const IndexArray& x, const IndexArray& y) { return model.loss(x, y); });
  std::printf("dumped: %s (loss %.6f on one fresh batch)\n", dir.c_str(), loss);
}

}  // namespace gs::experiments
