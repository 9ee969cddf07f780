// Reference solution of exercise 3 (docs/coursework.md#ex3).
#include "../ex3_b2t.hpp"

#include "engine/engine.hpp"

namespace gs::coursework {

B2TBlock::B2TBlock(const nn::ModelConfig& config, nn::Initializer& init)
    : ln1(config.d_model), attn(config.d_model, config.heads, init), ln2(config.d_model),
      mlp(config.d_model, config.ff(), init) {
  add_child("ln1", ln1);
  add_child("attn", attn);
  add_child("ln2", ln2);
  add_child("mlp", mlp);
}

Var B2TBlock::forward(const Var& x, Site site) {
  Var h = ln1.forward(x + attn.forward(x, site), site);  // (B, T, C)  Post-LN's first sublayer
  return ln2.forward(h + mlp.forward(h, site) + x, site);  // (B, T, C)  + x: the bottom-to-top skip
}

}  // namespace gs::coursework
