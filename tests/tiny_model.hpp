// A tiny model and a fixed batch of token ids for the tests of what analysis/ measures after one
// forward pass: 2 blocks of width 8 with 2 heads over 8 tokens, context 6.
#pragma once

#include <cstdint>
#include <string>

#include "nn/transformer_lm.hpp"

namespace gs::test {

inline nn::TransformerLM tiny_model(const std::string& placement) {
  nn::ModelConfig c{.vocab = 8, .context = 6, .d_model = 8, .heads = 2, .layers = 2, .seed = 5};
  nn::apply_placement(c, placement);
  return nn::TransformerLM(c);
}

inline IndexArray tiny_ids(std::size_t B, std::size_t T) {  // (B, T): token (3i + 1) mod 8 at flat position i
  IndexArray t = xt::zeros<std::int64_t>({B, T});
  for (std::size_t i = 0; i < B * T; ++i) t.flat(i) = static_cast<std::int64_t>((3 * i + 1) % 8);
  return t;
}

// Zero queries and keys in every block: every score is 0, so position t attends uniformly to its t + 1 keys.
inline void make_attention_uniform(nn::TransformerLM& model) {
  for (const auto& block : model.blocks)
    for (nn::Linear* l : {&block->attn.q, &block->attn.k}) {
      l->weight.value().fill(0.0);
      l->bias.value().fill(0.0);
    }
}

}  // namespace gs::test
