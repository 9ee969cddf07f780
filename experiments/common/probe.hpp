// Measurements of a model at initialization that gradflow and amplification share: fresh batches of
// the Markov corpus, gradient norms per layer and per parameter group, the slope of a log-log fit,
// and a one-line status on stderr.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "nn/data/markov.hpp"
#include "nn/module.hpp"

namespace gs::experiments {

// The five placements, in the order the experiments print them.
std::vector<std::string> all_placements();

// Fresh (batch, seq) batches of dump_corpus (run.hpp), the Markov corpus --dump uses for `seed`: a chain
// with MarkovOptions{vocab, seed} (order 2, concentration 0.1) and a short stream drawn from it.
// batch(0) is exactly the batch dump_model draws for that seed, so `--dump` writes the gradients of
// the batch the measurement of that seed used; batch(j) for j > 0 are other windows of the same stream.
class MarkovBatches {
 public:
  MarkovBatches(std::size_t vocab, std::size_t batch, std::size_t seq, unsigned seed);
  nn::Batch batch(std::size_t j) const;  // inputs, targets (batch, seq)

 private:
  std::size_t batch_, seq_;
  unsigned seed_;
  nn::Dataset data_;
};

// Gradient norms of a TransformerLM, grouped. The norm of a group is the Frobenius norm of all its
// gradients together: |g_group| = sqrt(sum over its parameters P of sum_ij (dL/dP_ij)^2).
// Groups within block i (names as in docs/placements.md):
//   q, k, v, o   blocks.i.attn.{q,k,v,o}.weight        fc1, fc2   blocks.i.mlp.{fc1,fc2}.weight
//   ln           the gains (.weight) of every LayerNorm of the block: ln1, ln2 (+ ln_attn_out, ln_mlp_out)
//   rezero       blocks.i.rezero_attn and rezero_mlp
//   block        every parameter of block i, biases included
// Model-level groups: tok_emb, pos_emb, ln_f (weight and bias), head (weight and bias), total (all).
// A group a placement does not have (ln for rezero, rezero for the others) is absent from the map.
struct GradNorms {
  std::vector<std::map<std::string, double>> blocks;  // [layer][group]
  std::map<std::string, double> model;
};

// The groups of a block, in print order.
const std::vector<std::string>& block_groups();
// The group of a parameter of a block: "blocks.3.mlp.fc2.weight" -> "fc2"; "" for one that is only in
// "block" (biases) and for names outside the blocks. *layer gets the block index (-1 outside blocks).
std::string block_group(const std::string& name, int* layer = nullptr);
// The model-level group of a name outside the blocks ("tok_emb", "pos_emb", "ln_f", "head"), else "".
std::string model_group(const std::string& name);

// The groups' norms of the parameters' current gradients (after a backward pass).
GradNorms grad_norms(const std::vector<nn::NamedParameter>& parameters, std::size_t layers);

// Least squares of log y on log x: log y = intercept + slope * log x. NaN slope and intercept when
// there are fewer than two points, the x are all equal, or any x or y is not finite and positive.
struct LineFit {
  double slope;
  double intercept;
};
LineFit loglog_fit(const std::vector<double>& x, const std::vector<double>& y);

// One line on stderr, "gradflow [=====>     ] 37/62  post L=16 seed 1", redrawn in place on a
// terminal (at most 10 times a second) and written as a plain line every 10% otherwise. Units of
// work are whatever the caller counts (layers measured, say), so the bar fills evenly.
class StatusLine {
 public:
  StatusLine(std::string program, std::size_t total_units);
  void advance(std::size_t units, const std::string& what);  // `units` more done, the last of them `what`
  void finish();                                              // ends the line

 private:
  std::string program_;
  std::size_t total_, done_ = 0, next_plain_ = 0;
  bool terminal_, open_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace gs::experiments
