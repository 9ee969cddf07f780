// The flags every experiment binary shares beyond the model flags: where results go, how many seeds
// to average, and --dump. Set the fields before add_run_options to change a binary's defaults.
#pragma once

#include <chrono>
#include <string>

#include <CLI/CLI.hpp>

#include "experiments/common/cli.hpp"
#include "nn/data/markov.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::experiments {

struct RunOptions {
  std::string out;          // --out DIR: CSV files and plots (PNG, SVG) go here
  std::size_t seeds = 3;    // --seeds N: every measurement is repeated with seeds 0..N-1 (plus --seed)
  std::string dump;         // --dump DIR: weights, gradients, batch and loss of one fresh batch
};

// What every experiment binary calls first: OpenBLAS on one thread (faster for these sizes on small
// machines), and malloc told to keep freed memory in the process. Every training step allocates and
// frees the same few megabytes of arrays; returning them to the kernel and page-faulting them back in
// on the next step cost about a third of the run time.
void setup_process();

// Seconds since `start` on the steady clock.
double seconds_since(std::chrono::steady_clock::time_point start);

// Adds --out, --seeds and --dump.
void add_run_options(CLI::App& app, RunOptions& options);

// The Markov corpus --dump draws its batch from: a chain with MarkovOptions{vocab, seed} and a stream
// just long enough for (batch, seq) windows. Experiments that must measure on the dumped batch use it.
nn::Dataset dump_corpus(std::size_t vocab, std::size_t batch, std::size_t seq, unsigned seed);

// For --dump: writes DIR/config.json, params/, grads/, batch/ and loss.npy (nn/io/dump.hpp) for `model`
// as it is now, on one fresh (batch, seq) batch of a Markov corpus over the model's vocabulary, drawn
// with `seed`, as a whole (nn::write_dump; its manifest names the running binary). Prints where it wrote.
void dump_model(const std::string& dir, nn::TransformerLM& model, std::size_t batch, std::size_t seq, unsigned seed);

}  // namespace gs::experiments
