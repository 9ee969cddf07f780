// Measures of representation collapse: how far the positions of a sequence have become one vector.
// A stuck Post-LN run's top blocks hand every position the same vector, attend uniformly and fire few
// FFN units; these numbers say how much of that a model shows, per block, after a forward pass.
//
// Each takes an activation x of shape (B, T, C) and measures every sequence b on its own (its T rows
// x_b,t in R^C), then averages over the batch:
//   position_cosine    mean over pairs t != s of cos(x_b,t, x_b,s): 1 when every position holds the
//                      same direction, about 0 for unrelated directions
//   top_direction_share  sigma_1^2 / sum_i sigma_i^2 of the (T, C) matrix x_b (uncentered): the share of
//                      the energy sum_t |x_b,t|^2 in its top singular direction; 1 for rank one
//   shared_share       T |m_b|^2 / sum_t |x_b,t|^2 with m_b = mean_t x_b,t: the share of the energy in
//                      the component every position shares (the rest is sum_t |x_b,t - m_b|^2)
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "engine/array.hpp"
#include "engine/error.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::analysis {

// Each throws gs::Error naming itself, the shape and the caller's line for an x that is not (B, T, C).
double position_cosine(const Array& x, Site site = Site::current());      // (B, T, C), T >= 2
double top_direction_share(const Array& x, Site site = Site::current());  // (B, T, C)
double shared_share(const Array& x, Site site = Site::current());         // (B, T, C)

// The share of FFN units that fire at no position: unit j of an fc1 with pre-activation
// z = x W1 + b1 (B, T, d_ff) is dead on this batch when z_b,t,j <= 0 at every (b, t), so GELU passes
// at most the small negative tail gelu(z) >= -0.17 and its slope is below 1/2 everywhere.
double dead_unit_fraction(const Array& pre_activation, Site site = Site::current());  // (B, T, d_ff)

// The mean attention entropy of a block's heads as a share of its maximum: attention_entropy
// (step_measures.hpp) divided by the mean over query positions of log(t + 1), the entropy of uniform
// causal attention. 1 is uniform attention, 0 every query on one key.
std::vector<double> attention_entropy_share(const nn::TransformerLM& model);  // one per block

// Every measure of one block in the last forward pass (BlockTrace, nn/block.hpp). Every placement
// records a skip and a branch for both sublayers, so each is defined for every member of the zoo,
// except where it would divide by zero; there it is NaN:
//   out_cosine          NaN for T = 1 (no pair of positions)
//   *_shared_share      NaN for a branch that is exactly 0 (rezero at init: a = 0; nothing to share)
//   *_branch_to_skip    NaN for a skip that is exactly 0 (0 for rezero's zero branch at init)
//   entropy_share       NaN for T = 1 (attention_entropy_share)
struct BlockCollapse {
  double out_cosine;          // position_cosine of the block's output y
  double out_top_share;       // top_direction_share of y (NaN when not asked for: block_collapse)
  double attn_shared_share;   // shared_share of the attention branch's output
  double mlp_shared_share;    // shared_share of the MLP branch's output
  double attn_branch_to_skip; // rms(attention branch) / rms(its skip) (rms: stream_split.hpp)
  double mlp_branch_to_skip;  // rms(MLP branch) / rms(its skip)
  double dead_units;          // dead_unit_fraction of fc1's pre-activation on the MLP's input
  double entropy_share;       // attention_entropy_share of the block
};
// After a forward pass of `model` (its blocks' last traces and attention weights), block by block.
// top_share false leaves out_top_share NaN: it is the one measure that takes an eigendecomposition
// (of each sequence's T x T Gram matrix), the others are sums over the activations.
std::vector<BlockCollapse> block_collapse(const nn::TransformerLM& model, bool top_share = true);

// What the head predicts, from logits z (B, T, V) with p_t = softmax(z_t) at each position t:
//   entropy        mean over positions of H(p_t) = -sum_v p_t,v log p_t,v
//   kl_to_unigram  mean over positions of KL(u || p_t) = sum_v u_v log(u_v / p_t,v), u the corpus's
//                  unigram frequencies (nn::unigram_distribution): 0 when every position predicts u, and
//                  finite for every softmax p (a u_v = 0 adds nothing), where KL(p_t || u) is infinite
//                  for a symbol the training text lacks. It is the extra loss p_t has on tokens drawn
//                  from u over what u itself has, H(u, p_t) - H(u).
// A top representation that is the same vector at every position gives the same p at every position,
// and the best such p for cross-entropy is u, with loss H1 = H(u): the unigram loss of a stuck run.
struct Predictions {
  double entropy = NAN, kl_to_unigram = NAN;
};
Predictions predictions(const Array& logits, const std::vector<double>& unigram, Site site = Site::current());

// One forward pass of `inputs` (B, T) without gradient, measured: every block's collapse (without the
// top-direction share, NaN) and the head's predictions against `unigram`. Resets the current tape
// before and after.
struct Collapse {
  std::vector<BlockCollapse> blocks;
  Predictions head;
};
Collapse collapse_on(nn::TransformerLM& model, const IndexArray& inputs, const std::vector<double>& unigram);

}  // namespace gs::analysis
