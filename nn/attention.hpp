// Causal multi-head self-attention (Vaswani et al. 2017, decoder-only):
//   q, k, v = x Wq + bq, x Wk + bk, x Wv + bv                 (B, T, C) each
//   split heads: (B, T, C) -> (B, T, H, dh) -> (B, H, T, dh), C = H * dh
//   scores = q k^T / sqrt(dh)                                  (B, H, T, T)
//   scores[.., i, j] = -1e9 for j > i (a position sees only itself and the past)
//   att = softmax(scores) over the last axis;  y = att v       (B, H, T, dh)
//   merge heads: (B, H, T, dh) -> (B, T, H, dh) -> (B, T, C);  out = y Wo + bo
#pragma once

#include <cstddef>

#include "engine/var.hpp"
#include "nn/init.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"

namespace gs::nn {

// The value written into masked scores. A large finite negative rather than -inf, so that anomaly
// mode (which rejects any Inf) can stay on; e^(-1e9 - max) is exactly 0.0 in double, so the result is
// the same as with -inf, and the masked scores get gradient exactly 0.
inline constexpr double kMaskedScore = -1e9;

class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(std::size_t d, std::size_t heads, Initializer& init);
  Var forward(const Var& x, Site site = Site::current());  // (B, T, C) -> (B, T, C)

  std::size_t dim, heads, head_dim;
  Linear q, k, v, o;  // each [C, C] with bias [C]

  // Handles to the last forward's attention weights (B, H, T, T), for experiments.
  Var last_att;
};

}  // namespace gs::nn
