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

}  // namespace gs::test
