// A decoder-only Transformer language model:
//   x = tok_emb[ids] + pos_emb[0:T]          (B, T, C)
//   x = blocks[i](x) for i = 0..N-1          (B, T, C)   placement, norm, residual from ModelConfig
//   x = ln_f(x)                              pre, peri, mixln and out (a norm of ModelConfig::norm; none for none)
//   logits = x @ head.weight + head.bias     (B, T, V)
//   loss = mean over (B, T) of -log softmax(logits)[target]               (the cross-entropy, CE)
//        + z_loss * mean over (B, T) of (log Z)^2,  log Z = logsumexp(logits[b, t])   (z_loss > 0 only)
// Parameter names (dotted, exact): tok_emb.weight [V,d], pos_emb.weight [T,d],
// blocks.{i}.ln1.{weight,bias} [d], blocks.{i}.attn.{q,k,v,o}.weight [d,d] and .bias [d],
// blocks.{i}.ln2.{weight,bias}, blocks.{i}.mlp.fc1.weight [d,d_ff], .bias [d_ff],
// blocks.{i}.mlp.fc2.weight [d_ff,d], .bias [d], ln_f.{weight,bias}, head.weight [d,V], head.bias [V];
// with the norm's own parameter names (rms: weight only; dyt: weight, bias, alpha), plus the extra
// parameters of peri, rezero and admin listed in docs/placements.md.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "engine/var.hpp"
#include "nn/block.hpp"
#include "nn/config.hpp"
#include "nn/embedding.hpp"
#include "nn/init.hpp"
#include "nn/interventions.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "nn/norm.hpp"

namespace gs::nn {

// Handles to the last forward's model-level values (each block keeps its own BlockTrace).
struct LMTrace {
  Var emb;         // tok_emb + pos_emb (B, T, C), labelled "emb"
  Var final_norm;  // ln_f's output (B, T, C), labelled "ln_f"; empty without ln_f
  Var logits;      // (B, T, V), labelled "logits"
  Var ce;          // loss(): the mean cross-entropy (the loss itself when z_loss is 0)
  Var log_z;       // loss() with z_loss > 0: log Z per position (B, T), labelled "log_z"; else empty
};

// log Z = logsumexp over the last axis, logits (B, T, V) -> (B, T): m + log sum_v e^(z_v - m), with m the
// row's max held as a constant (the value does not depend on m, so neither does the gradient softmax(z)).
Var log_partition(const Var& logits, Site site = Site::current());

class TransformerLM : public Module {
 public:
  // Builds and initialises every parameter from config.init and config.seed; throws gs::Error for an
  // impossible config (d_model not divisible by heads, a zero size, a refused placement). For
  // residual admin it then runs profile_admin on a batch of its own (docs/placements.md#admin).
  explicit TransformerLM(const ModelConfig& config);

  // ids (B, T) integers in [0, V), 1 <= T <= context  ->  logits (B, T, V)
  Var logits(const IndexArray& ids, Site site = Site::current());
  // The mean cross-entropy of logits(ids) against targets (B, T), plus z_loss * mean (log Z)^2 when
  // z_loss > 0 (Chowdhery et al. 2022; Wortsman et al. 2023): a scalar. last.ce holds the CE alone.
  Var loss(const IndexArray& ids, const IndexArray& targets, Site site = Site::current());

  void set_fused_norms(bool fused);  // every norm of the model fused (default) or composite
  bool has_final_norm() const { return ln_f != nullptr; }
  // Every norm trace of the last forward (nn/block.hpp NormTrace), of any norm kind: each block's, in
  // forward order, then ln_f's. Empty for norm none.
  std::vector<NormTrace> norm_traces() const;

  // Admin (Liu et al. 2020): sets every block's omegas by one forward pass on ids (B, T), in the order
  // of their reference code (docs/placements.md#admin). The constructor calls it on B = 4 sequences of
  // context tokens drawn uniformly from the initialiser's random stream; call it again to profile on
  // data. Throws gs::Error unless the model's residual is admin.
  void profile_admin(const IndexArray& ids);

  // Switches the backward-pass interventions of every block (nn/interventions.hpp) on or off; throws
  // gs::Error for a combination that refusal() refuses for this model. The forward pass is unchanged.
  void set_interventions(const Interventions& interventions);
  const Interventions& interventions() const { return interventions_; }
  // Sets every block's BranchControl (nn/interventions.hpp): the forward of each residual add changes.
  // Throws gs::Error for a clamp < 0 or a scale <= 0 or not finite.
  void set_branch_control(const BranchControl& control);

  ModelConfig config;
  double z_loss = 0.0;  // C of the z-loss term (a training choice, not in config.json); 0: CE only
 private:
  Initializer init_;  // consumed by the members below, in this order
  Interventions interventions_;
 public:
  Embedding tok_emb;                          // "tok_emb"
  PositionalEmbedding pos_emb;                // "pos_emb"
  std::vector<std::unique_ptr<Block>> blocks;  // "blocks.0", "blocks.1", ...
  std::unique_ptr<NormLayer> ln_f;            // "ln_f": pre, peri, mixln and out with a norm, else null
  Linear head;                                // "head"

  LMTrace last;
};

}  // namespace gs::nn
