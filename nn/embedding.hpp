// Embeddings: a token table looked up by id, and a learned table of positions 0..T-1.
#pragma once

#include <cstddef>

#include "engine/var.hpp"
#include "nn/init.hpp"
#include "nn/module.hpp"

namespace gs::nn {

// Token embedding: weight [V, d]; ids (...) in [0, V) -> (..., d), out[i] = weight[ids[i]].
class Embedding : public Module {
 public:
  Embedding(std::size_t vocab, std::size_t d, Initializer& init);  // N(0, 1), or N(0, 0.02) for gpt2
  Var forward(const IndexArray& ids, Site site = Site::current()) const;

  std::size_t vocab, dim;
  Parameter weight;  // [V, d]
};

// Learned positional embedding: weight [context, d]; forward(T) = weight[0:T] of shape (T, d), which
// broadcasts over the batch when added to the token embeddings (B, T, d).
class PositionalEmbedding : public Module {
 public:
  PositionalEmbedding(std::size_t context, std::size_t d, Initializer& init);
  Var forward(std::size_t T, Site site = Site::current()) const;

  std::size_t context, dim;
  Parameter weight;  // [context, d]
};

}  // namespace gs::nn
