// Exercise 10 (docs/coursework.md#ex10): the Post-LN and the Pre-LN block, written from the formulas.
// With x the block's input (B, T, C), Attn causal self-attention, MLP the feed-forward sublayer and
// LN1, LN2 the block's two LayerNorms:
//   Post-LN (Vaswani et al. 2017):   h = LN1(x + Attn(x));       y = LN2(h + MLP(h))
//   Pre-LN  (Xiong et al. 2020):     h = x + Attn(LN1(x));       y = h + MLP(LN2(h))
// In Post-LN every path from y down to x passes through LN1 and LN2: the norms sit on the residual
// stream. In Pre-LN the skip path x -> h -> y is a sum of identities, and the norms sit on the branches.
// Module 3, the placements. Difficulty: 1/3. Time: about 30 min.
#pragma once

#include "engine/var.hpp"
#include "nn/block.hpp"

namespace gs::coursework {

// The formula above on the block's own modules: block.ln1->forward, block.attn.forward,
// block.ln2->forward, block.mlp.forward, and + for the residual adds. Whatever block.placement says:
// each function computes its own placement. Do not call block.forward.
Var post_ln_block(nn::Block& block, const Var& x);  // (B, T, C) -> (B, T, C)
Var pre_ln_block(nn::Block& block, const Var& x);   // (B, T, C) -> (B, T, C)

}  // namespace gs::coursework
