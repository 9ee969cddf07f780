// The residual stream of a TransformerLM, read off the tape: where the stream is between sublayers,
// how large it is, and how the gradient that reached each position splits into what came through the
// skip (identity) path and what came through the branch.
//
// Sublayer k of the model (k = 0 .. 2L-1) is block k/2's attention when k is even and its MLP when k
// is odd. Stream position k is the input of sublayer k; position 2L is the last block's output:
//   k:     0      1              2              3              ...  2L
//   name:  emb    blocks.0.mid   blocks.0.out   blocks.1.mid   ...  blocks.{L-1}.out
// (blocks.l.out is also block l+1's input x.) Sublayer k reads its input through two kinds of op:
//   skip      the op of the skip path: the residual add itself, or for deepnorm the scaling alpha * x
//             (BlockTrace::attn_skip / mlp_skip when that is an op of its own, else attn_sum / mlp_sum)
//   branch    every other op that reads it: the sublayer's first ops (q, k, v projections or fc1) for
//             post, deepnorm and rezero, the LayerNorm ln1 / ln2 for pre and peri.
// With Tape::keep_contributions on, contributions(v) (engine/tools/inspect.hpp) lists the gradients that v's
// consumers sent it, each with the sender's tape index, so the split is exact: skip + branch = gradient
// (nn::split_skip_branch of nn/residual_edges.hpp takes it at one position).
#pragma once

#include <string>
#include <vector>

#include "engine/array.hpp"
#include "engine/var.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::analysis {

// One position of the residual stream in the model's last forward.
struct StreamPosition {
  std::string name;  // "emb", "blocks.0.mid", "blocks.0.out", ...
  Var value;         // the stream there, (B, T, C)
  bool top;          // the last block's output: read by ln_f or the head, no skip path
};

// The 2L + 1 positions of the model's last forward (model.last and each block's BlockTrace), in
// order from emb to the last block's output.
std::vector<StreamPosition> stream_positions(const nn::TransformerLM& model);

// sqrt(mean x^2) over every element of x (0 for an empty x).
double rms(const Array& x);

// Norms of a (..., C) array taken per position (over the last axis), averaged over the other axes:
//   mean_rms: mean of sqrt(mean_c x^2)      mean_l2: mean of sqrt(sum_c x^2) = sqrt(C) * mean_rms
double mean_rms(const Array& x);
double mean_l2(const Array& x);

// max |a - b| over all elements (same shapes), for checks.
double max_abs_diff(const Array& a, const Array& b);

}  // namespace gs::analysis
