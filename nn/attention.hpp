// Causal multi-head self-attention (Vaswani et al. 2017, decoder-only):
//   q, k, v = x Wq + bq, x Wk + bk, x Wv + bv                 (B, T, C) each
//   split heads: (B, T, C) -> (B, T, H, dh) -> (B, H, T, dh), C = H * dh
//   qk-norm (ModelConfig::qk_norm, off by default): q_h = Nq(q_h), k_h = Nk(k_h) over each head's dh
//     features, Nq and Nk a LayerNorm (weight, bias [dh]) or an RMSNorm (weight [dh]) shared by the heads
//   scores = q k^T / sqrt(dh)                                  (B, H, T, T)
//   scores[.., i, j] = -1e9 for j > i (a position sees only itself and the past)
//   att = softmax(scores) over the last axis;  y = att v       (B, H, T, dh)
//   merge heads: (B, H, T, dh) -> (B, T, H, dh) -> (B, T, C);  out = y Wo + bo
#pragma once

#include <cstddef>

#include <vector>

#include "engine/tape.hpp"
#include "engine/var.hpp"
#include <memory>

#include "nn/config.hpp"
#include "nn/init.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "nn/norm.hpp"

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

// The fused form, two tape entries instead of ten, with no head ever copied out of (B, T, C):
//   attention_weights_fused  att = softmax(mask(q k^T / sqrt(dh))) per head   (B, T, C) x2 -> (B, H, T, T)
//   attention_mix_fused      y = att v per head, heads merged                  (B, H, T, T), (B, T, C) -> (B, T, C)
//   attention_fused          the two in a row: the twin of attention_composite (att_out receives att)
// The masked (future) weights are exactly 0, as in the composite. tests/test_fused_kernels.cpp checks
// that both forms agree in value and gradient.
Var attention_weights_fused(const Var& q, const Var& k, std::size_t heads, Site site = Site::current());
Var attention_mix_fused(const Var& att, const Var& v, std::size_t heads, Site site = Site::current());
Var attention_fused(const Var& q, const Var& k, const Var& v, std::size_t heads, Var* att_out = nullptr,
                    Site site = Site::current());

// The fused ops' arithmetic on plain arrays, forward beside backward. Per batch b and head h, Q, K, V
// are the head's (T, dh) column blocks of q, k, v (B, T, C), A = att[b, h] (T, T), G the incoming gradient:
//   weights forward:   A = softmax(mask(Q K^T / sqrt(dh)))                                   -> (B, H, T, T)
//   weights backward:  dS = A * (G - rowsum(G * A)),  dQ = dS K / sqrt(dh),  dK = dS^T Q / sqrt(dh)
//                      -> {dq, dk} (B, T, C) each; att is the op's output, handed in by the tape
//   mix forward:       Y = A V, heads merged                                                 -> (B, T, C)
//   mix backward:      dA = G V^T,  dV = A^T G                      -> {datt (B, H, T, T), dv (B, T, C)}
// An entry of `needs` that is false gives an empty array instead.
Array attention_weights_forward(const Array& q, const Array& k, std::size_t heads);
Grads attention_weights_backward(const Array& grad, const Array& att, const Array& q, const Array& k,
                                 std::size_t heads, const std::vector<bool>& needs);
Array attention_mix_forward(const Array& att, const Array& v, std::size_t heads);
Grads attention_mix_backward(const Array& grad, const Array& att, const Array& v, std::size_t heads,
                             const std::vector<bool>& needs);

class CausalSelfAttention : public Module {
 public:
  // qk_norm adds q_norm and k_norm (weights 1, biases 0: no initialisation draw, so q, k, v, o draw
  // the same numbers with and without it).
  CausalSelfAttention(std::size_t d, std::size_t heads, Initializer& init, QkNorm qk_norm = QkNorm::none);
  Var forward(const Var& x, Site site = Site::current());  // (B, T, C) -> (B, T, C)

  std::size_t dim, heads, head_dim;
  Linear q, k, v, o;  // each [C, C] with bias [C]
  std::unique_ptr<NormLayer> q_norm, k_norm;  // qk-norm over dh features ("q_norm", "k_norm"); null without

  // Handles to the last forward's queries and keys as the scores read them (B, T, C), heads side by
  // side (after qk-norm when it is on): scores = q_h k_h^T / sqrt(dh). For the per-step measures.
  Var last_q, last_k;

  // Handles to the last forward's attention weights (B, H, T, T), for experiments.
  Var last_att;
  // true: attention_fused (two entries); false: attention_composite.
  bool fused = true;
};

}  // namespace gs::nn
