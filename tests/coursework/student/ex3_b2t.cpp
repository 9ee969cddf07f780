// Your solution of exercise 3: docs/coursework.md#ex3. Check it with
//   build/bin/gradscope_tests "[ex3]"     (configured with -DGRADSCOPE_COURSEWORK=student)
#include "../ex3_b2t.hpp"

#include "engine/engine.hpp"

namespace gs::coursework {

B2TBlock::B2TBlock(const nn::ModelConfig& config, nn::Initializer& init)
    : ln1(config.d_model), attn(config.d_model, config.heads, init), ln2(config.d_model),
      mlp(config.d_model, config.ff(), init) {
  // Register the four children with add_child(name, module), under the names in ex3_b2t.hpp.
}

Var B2TBlock::forward(const Var& x, Site site) {
  // h = LN1(x + Attn(x));  y = LN2(h + MLP(h) + x)
  (void)x;
  fail("B2TBlock", site, "not implemented yet: see docs/coursework.md#ex3");
}

}  // namespace gs::coursework
