// The model's shape and its residual-block placement: what every binary's model flags fill in.
#pragma once

#include <cstddef>
#include <string>

namespace gs::nn {

// Where the normalization sits in a residual block (formulas in nn/block.hpp and the docs).
enum class Placement { post, pre, peri, deepnorm, rezero };
inline constexpr Placement all_placements[] = {Placement::post, Placement::pre, Placement::peri, Placement::deepnorm,
                                               Placement::rezero};

std::string to_string(Placement placement);
// "post", "pre", "peri" (or "sandwich"), "deepnorm", "rezero"; anything else throws gs::Error
// listing the valid names.
Placement parse_placement(const std::string& name);

enum class Init { xavier, gpt2 };  // Xavier-uniform linear weights, or GPT-2's N(0, 0.02)

struct ModelConfig {
  std::size_t vocab = 64;
  std::size_t context = 32;   // the longest sequence (rows of the positional embedding)
  std::size_t d_model = 64;
  std::size_t heads = 4;
  std::size_t layers = 2;
  std::size_t d_ff = 0;       // 0 means 4 * d_model
  Placement placement = Placement::pre;
  Init init = Init::xavier;
  unsigned seed = 0;          // initialisation seed

  std::size_t ff() const { return d_ff == 0 ? 4 * d_model : d_ff; }
};

}  // namespace gs::nn
