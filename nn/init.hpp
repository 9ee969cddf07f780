// Seeded initialisers. Every random value of a model comes from one std::mt19937_64 seeded by
// ModelConfig::seed and consumed in construction order, so the same seed gives the same model on
// every run. The uniform and normal draws are written out here (53-bit uniforms, Box-Muller normals)
// rather than taken from <random>'s distributions, whose algorithms differ between standard libraries.
#pragma once

#include <cstddef>
#include <random>

#include "engine/array.hpp"
#include "nn/config.hpp"

namespace gs::nn {

// U(-a, a) with a = sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio 2010); shape [fan_in, fan_out].
Array xavier_uniform(std::size_t fan_in, std::size_t fan_out, std::mt19937_64& rng);
// Every element N(mean, std^2).
Array normal(const Shape& shape, double mean, double std, std::mt19937_64& rng);
// Every element U(low, high).
Array uniform(const Shape& shape, double low, double high, std::mt19937_64& rng);
Array zeros(const Shape& shape);
Array ones(const Shape& shape);

// The initialisation scheme of a model (ModelConfig::init) together with its random stream. Layers
// take one in their constructors and ask it for their starting values.
//   scheme     linear weight            embeddings     biases   norm weight / bias
//   xavier     Xavier-uniform           N(0, 1)        0        1 / 0
//   gpt2       N(0, 0.02)               N(0, 0.02)     0        1 / 0
class Initializer {
 public:
  explicit Initializer(Init scheme = Init::xavier, unsigned seed = 0) : scheme_(scheme), rng_(seed) {}

  Array linear_weight(std::size_t in, std::size_t out);  // [in, out]
  Array embedding(std::size_t rows, std::size_t d);      // [rows, d]

  Init scheme() const { return scheme_; }
  std::mt19937_64& rng() { return rng_; }

 private:
  Init scheme_;
  std::mt19937_64 rng_;
};

}  // namespace gs::nn
