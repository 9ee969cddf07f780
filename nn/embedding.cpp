#include "nn/embedding.hpp"

#include "engine/engine.hpp"

namespace gs::nn {

Embedding::Embedding(std::size_t vocab_size, std::size_t d, Initializer& init) : vocab(vocab_size), dim(d) {
  weight = add_parameter("weight", init.embedding(vocab_size, d));  // [V, d]
}

Var Embedding::forward(const IndexArray& ids, Site site) const {
  for (std::int64_t id : ids)
    if (id < 0 || static_cast<std::size_t>(id) >= vocab)
      fail("Embedding", site, "token id " + std::to_string(id) + " is out of range for a vocabulary of " +
                                  std::to_string(vocab) + " (weight " + shape_str(weight.shape()) + ", ids " +
                                  shape_str(shape_of(ids)) + ")");
  // out[i..., :] = weight[ids[i...], :]   ids (...) -> (..., d)
  return gather_rows(weight, ids);
}

PositionalEmbedding::PositionalEmbedding(std::size_t context_length, std::size_t d, Initializer& init)
    : context(context_length), dim(d) {
  weight = add_parameter("weight", init.embedding(context_length, d));  // [T_max, d]
}

Var PositionalEmbedding::forward(std::size_t T, Site site) const {
  if (T == 0 || T > context)
    fail("PositionalEmbedding", site, "sequence length " + std::to_string(T) + " is not in [1, context = " +
                                          std::to_string(context) + "] (weight " + shape_str(weight.shape()) + ")");
  // out = weight[0:T, :]   (T, d)
  return slice(weight, 0, 0, T);
}

}  // namespace gs::nn
