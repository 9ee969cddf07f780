// Exercise 3 (docs/coursework.md#ex3): a residual block with a placement gradscope lacks, the B2T
// connection of Takase et al., "B2T Connection: Serving Stability and Performance in Deep
// Transformers" (Findings of ACL 2023, arXiv:2206.00330): Post-LN plus one more skip, from the
// block's bottom (its input x) to its top (just before the last LayerNorm):
//   post:  h = LN1(x + Attn(x));   y = LN2(h + MLP(h))
//   B2T:   h = LN1(x + Attn(x));   y = LN2(h + MLP(h) + x)
// Built from nn's modules; nothing in nn/ changes.
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

class B2TBlock : public nn::Module {
 public:
  // d_model, heads and d_ff from config (its placement is ignored); weights drawn from init.
  B2TBlock(const nn::ModelConfig& config, nn::Initializer& init);
  Var forward(const Var& x, Site site = Site::current());  // (B, T, C) -> (B, T, C)

  // Children, registered under these names (so its parameters are named like nn::Block's:
  // "ln1.weight", "attn.q.weight", ..., "mlp.fc2.bias").
  nn::LayerNorm ln1;
  nn::CausalSelfAttention attn;
  nn::LayerNorm ln2;
  nn::MLP mlp;
};

}  // namespace gs::coursework
