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

// The attention core on plain Vars: q, k, v (B, T, C) -> (B, T, C), heads merged.
//
// attention_composite is the plain formulation, one engine op per step of the math above (reshape,
// permute, matmul, scale, masked_fill, softmax, matmul, permute, reshape); att_out, when given,
// receives att (B, H, T, T).
Var attention_composite(const Var& q, const Var& k, const Var& v, std::size_t heads, Var* att_out = nullptr,
                        Site site = Site::current());

// The fused kernels, two tape entries instead of ten, with no head ever copied out of (B, T, C):
//   attention_weights: att = softmax(mask(q k^T / sqrt(dh))) per head       (B, T, C) x2 -> (B, H, T, T)
//   attention_mix:     y = att v per head, heads merged                      (B, H, T, T), (B, T, C) -> (B, T, C)
// The masked (future) weights are exactly 0, as in the composite. tests/test_fused_kernels.cpp checks
// that both agree in value and gradient.
Var attention_weights(const Var& q, const Var& k, std::size_t heads, Site site = Site::current());
Var attention_mix(const Var& att, const Var& v, std::size_t heads, Site site = Site::current());

class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(std::size_t d, std::size_t heads, Initializer& init);
  Var forward(const Var& x, Site site = Site::current());  // (B, T, C) -> (B, T, C)

  std::size_t dim, heads, head_dim;
  Linear q, k, v, o;  // each [C, C] with bias [C]

  // Handles to the last forward's attention weights (B, H, T, T), for experiments.
  Var last_att;
  // true: the fused kernels attention_weights + attention_mix; false: attention_composite.
  bool fused = true;
};

}  // namespace gs::nn
