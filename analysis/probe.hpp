// Measurements of a model at initialization that gradflow and amplification share: fresh batches of
// the Markov corpus, gradient norms per layer and per parameter group, and slopes of log-log fits
// against depth.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "nn/data/dataset.hpp"
#include "nn/module.hpp"

namespace gs::analysis {

// Fresh (batch, seq) batches of dump_corpus (graph.hpp), the Markov corpus --dump uses for `seed`.
// batch(0) is dump_batch, the batch --dump writes for that seed, so `--dump` writes the gradients of
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

// Per seed s = 0 .. seeds-1: the slope of log y on log L over depths[from], depths[from + 1], ..., with
// y = value(L, s) (NaN where no line exists, see loglog_fit).
std::vector<double> depth_slopes(const std::vector<std::size_t>& depths, std::size_t from, std::size_t seeds,
                                 const std::function<double(std::size_t L, std::size_t seed)>& value);
// The depths from index `from` on, space-separated ("16 32"), as the slopes CSV files name them.
std::string depths_text(const std::vector<std::size_t>& depths, std::size_t from);

}  // namespace gs::analysis
