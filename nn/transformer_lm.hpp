// A decoder-only Transformer language model:
//   x = tok_emb[ids] + pos_emb[0:T]          (B, T, C)
//   x = blocks[i](x) for i = 0..N-1          (B, T, C)   placement from ModelConfig
//   x = ln_f(x)                              only for pre and peri
//   logits = x @ head.weight + head.bias     (B, T, V)
//   loss = mean over (B, T) of -log softmax(logits)[target]
// Parameter names (dotted, exact): tok_emb.weight [V,d], pos_emb.weight [T,d],
// blocks.{i}.ln1.{weight,bias} [d], blocks.{i}.attn.{q,k,v,o}.weight [d,d] and .bias [d],
// blocks.{i}.ln2.{weight,bias}, blocks.{i}.mlp.fc1.weight [d,d_ff], .bias [d_ff],
// blocks.{i}.mlp.fc2.weight [d_ff,d], .bias [d], ln_f.{weight,bias}, head.weight [d,V], head.bias [V];
// plus the extra parameters of peri and rezero listed in docs/placements.md.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "engine/var.hpp"
#include "nn/block.hpp"
#include "nn/config.hpp"
#include "nn/embedding.hpp"
#include "nn/init.hpp"
#include "nn/layernorm.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"

namespace gs::nn {

// Handles to the last forward's model-level values (each block keeps its own BlockTrace).
struct LMTrace {
  Var emb;         // tok_emb + pos_emb (B, T, C), labelled "emb"
  Var final_norm;  // ln_f's output (B, T, C), labelled "ln_f"; empty without ln_f
  Var logits;      // (B, T, V), labelled "logits"
};

class TransformerLM : public Module {
 public:
  // Builds and initialises every parameter from config.init and config.seed; throws gs::Error for an
  // impossible config (d_model not divisible by heads, a zero size).
  explicit TransformerLM(const ModelConfig& config);

  // ids (B, T) integers in [0, V), 1 <= T <= context  ->  logits (B, T, V)
  Var logits(const IndexArray& ids, Site site = Site::current());
  // The mean cross-entropy of logits(ids) against targets (B, T): a scalar.
  Var loss(const IndexArray& ids, const IndexArray& targets, Site site = Site::current());

  void set_fused_norms(bool fused);  // every LayerNorm of the model fused (default) or composite
  bool has_final_norm() const { return ln_f != nullptr; }

  ModelConfig config;
 private:
  Initializer init_;  // consumed by the members below, in this order
 public:
  Embedding tok_emb;                          // "tok_emb"
  PositionalEmbedding pos_emb;                // "pos_emb"
  std::vector<std::unique_ptr<Block>> blocks;  // "blocks.0", "blocks.1", ...
  std::unique_ptr<LayerNorm> ln_f;            // "ln_f": pre and peri only, else null
  Linear head;                                // "head"

  LMTrace last;
};

}  // namespace gs::nn
