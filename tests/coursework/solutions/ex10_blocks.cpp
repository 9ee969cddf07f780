// Reference solution of exercise 10 (docs/coursework.md#ex10).
#include "../ex10_blocks.hpp"

#include "engine/engine.hpp"

namespace gs::coursework {

Var post_ln_block(nn::Block& block, const Var& x) {
  Var h = block.ln1->forward(x + block.attn.forward(x));  // (B, T, C) h = LN1(x + Attn(x))
  return block.ln2->forward(h + block.mlp.forward(h));     // (B, T, C) y = LN2(h + MLP(h))
}

Var pre_ln_block(nn::Block& block, const Var& x) {
  Var h = x + block.attn.forward(block.ln1->forward(x));  // (B, T, C) h = x + Attn(LN1(x))
  return h + block.mlp.forward(block.ln2->forward(h));     // (B, T, C) y = h + MLP(LN2(h))
}

}  // namespace gs::coursework
