// Exercise 9 (docs/coursework.md#ex9): a residual block with a normalization gradscope does not have
// built in, HybridNorm (Zhuo et al. 2025, "HybridNorm: Towards Stable and Efficient Transformer
// Training via Hybrid Normalization", arXiv:2503.04598): the attention normalizes its queries, keys
// and values (QKV-Norm), and the stream is normalized in front of the feed-forward network (Post-Norm
// there). With x the block's input (B, T, C), C = H * dh:
//   q, k, v = x Wq + bq,  x Wk + bk,  x Wv + bv           (B, T, C) each, then split into heads (B, T, H, dh)
//   q, k, v = Nq(q), Nk(k), Nv(v)                          a LayerNorm over dh each, shared by the heads
//   h = x + (attention(q, k, v) Wo + bo)                   causal attention, heads merged (B, T, C)
//   n = N2(h);   y = n + MLP(n)                            N2 a LayerNorm over C
// Built from nn's modules and ops; nothing in nn/ changes.
// Module 2, the layers. Difficulty: 3/3. Time: about 90 min.
#pragma once

#include <cstddef>

#include "engine/var.hpp"
#include "nn/attention.hpp"
#include "nn/config.hpp"
#include "nn/init.hpp"
#include "nn/layernorm.hpp"
#include "nn/mlp.hpp"
#include "nn/module.hpp"

namespace gs::coursework {

class HybridNormBlock : public nn::Module {
 public:
  // d_model, heads and d_ff from config (its placement is ignored); weights drawn from init.
  HybridNormBlock(const nn::ModelConfig& config, nn::Initializer& init);
  Var forward(const Var& x, Site site = Site::current());  // (B, T, C) -> (B, T, C)

  // Children, registered under these names: parameters "attn.q.weight", ..., "q_norm.weight",
  // "k_norm.bias", "v_norm.weight", "ln2.weight", "mlp.fc2.bias".
  nn::CausalSelfAttention attn;  // its projections q, k, v, o (not its forward, which normalizes nothing)
  nn::LayerNorm q_norm;          // over dh
  nn::LayerNorm k_norm;          // over dh
  nn::LayerNorm v_norm;          // over dh
  nn::LayerNorm ln2;             // over C
  nn::MLP mlp;
};

}  // namespace gs::coursework
