// The residual block, with the normalization placement chosen at run time (ModelConfig::placement).
// Attn is CausalSelfAttention, MLP the feed-forward sublayer, LN a LayerNorm over the last axis:
//   post:      h = LN1(x + Attn(x));              y = LN2(h + MLP(h))
//   pre:       h = x + Attn(LN1(x));              y = h + MLP(LN2(h))        (the model adds ln_f)
//   peri:      h = x + LNa(Attn(LN1(x)));         y = h + LNm(MLP(LN2(h)))   (the model adds ln_f)
//   deepnorm:  h = LN1(alpha x + Attn(x));        y = LN2(alpha h + MLP(h))
//              alpha = (2N)^(1/4); at init fc1, fc2, v, o weights *= beta = (8N)^(-1/4)
//   rezero:    h = x + a_attn Attn(x);            y = h + a_mlp MLP(h)       a_* scalars, init 0, no LN
// N is the number of layers of the model. Parameter names are in docs/placements.md.
#pragma once

#include <cstddef>
#include <memory>

#include "engine/parameter.hpp"
#include "engine/var.hpp"
#include "nn/attention.hpp"
#include "nn/config.hpp"
#include "nn/init.hpp"
#include "nn/layernorm.hpp"
#include "nn/mlp.hpp"
#include "nn/module.hpp"

namespace gs::nn {

// Handles to the residual stream of a block's last forward, for experiments that separate the
// identity path from the branch path. Each sublayer adds  sum = skip + branch:
//   skip    the identity path: x itself, or alpha * x for deepnorm
//   branch  what the sublayer adds: Attn(x), Attn(LN1 x), LNa(Attn(LN1 x)) or a_attn * Attn(x)
//   sum     the add; for pre, peri and rezero it is the stream itself (sum == mid / out),
//           for post and deepnorm the stream is LN(sum)
// Labels on the tape (i = the block's index): blocks.i.attn_in, .attn_branch, .attn_skip (deepnorm),
// .attn_sum (post, deepnorm), .mid, and the same with mlp_ ending in .out: the stream positions have
// the same names here, on the tape and in the stream experiment (blocks.i.mid, blocks.i.out). The
// block's input is not relabelled: it is the previous block's out, or the model's "emb".
struct BlockTrace {
  Var input;        // x (B, T, C)
  Var attn_in;      // what Attn saw: x, or LN1(x) for pre and peri
  Var attn_skip;
  Var attn_branch;
  Var attn_sum;
  Var mid;          // h (B, T, C)
  Var mlp_in;       // what MLP saw: h, or LN2(h) for pre and peri
  Var mlp_skip;
  Var mlp_branch;
  Var mlp_sum;
  Var out;          // y (B, T, C)
};

class Block : public Module {
 public:
  // `index` is the block's position (for labels); config gives d, heads, d_ff, layers, placement.
  Block(const ModelConfig& config, std::size_t index, Initializer& init);

  Var forward(const Var& x, Site site = Site::current());  // (B, T, C) -> (B, T, C)
  void set_fused_norms(bool fused);  // fused or composite LayerNorms (default fused)

  Placement placement;
  std::size_t index;
  double alpha = 1.0;  // deepnorm's skip scale (2N)^(1/4); 1 otherwise
  double beta = 1.0;   // deepnorm's init scale (8N)^(-1/4) of fc1, fc2, v, o; 1 otherwise

  // Children; a null pointer where the placement has no such norm.
  std::unique_ptr<LayerNorm> ln1;          // post, pre, peri, deepnorm
  CausalSelfAttention attn;
  std::unique_ptr<LayerNorm> ln_attn_out;  // peri only
  std::unique_ptr<LayerNorm> ln2;          // post, pre, peri, deepnorm
  MLP mlp;
  std::unique_ptr<LayerNorm> ln_mlp_out;   // peri only
  Parameter rezero_attn;  // rezero only: shape [1], init 0
  Parameter rezero_mlp;   // rezero only: shape [1], init 0

  BlockTrace last;  // the stream of the last forward (handles into the current tape)
};

}  // namespace gs::nn
