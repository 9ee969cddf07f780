#include "nn/attention.hpp"

#include <cmath>

#include "engine/engine.hpp"

namespace gs::nn {
namespace {

// mask(i, j) = true where key position j lies after query position i: the future, hidden.
Mask causal_mask(std::size_t T) {
  Mask mask = xt::zeros<bool>({T, T});
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = i + 1; j < T; ++j) mask(i, j) = true;
  return mask;
}

}  // namespace

CausalSelfAttention::CausalSelfAttention(std::size_t d, std::size_t n_heads, Initializer& init)
    : dim(d), heads(n_heads), head_dim(n_heads == 0 ? 0 : d / n_heads),
      q(d, d, init), k(d, d, init), v(d, d, init), o(d, d, init) {
  if (n_heads == 0 || d % n_heads != 0)
    throw Error("CausalSelfAttention: d_model " + std::to_string(d) + " is not divisible by heads " +
                std::to_string(n_heads));
  add_child("q", q);
  add_child("k", k);
  add_child("v", v);
  add_child("o", o);
}

Var CausalSelfAttention::forward(const Var& x, Site site) {
  const Shape xs = x.shape(site);
  if (xs.size() != 3 || xs[2] != dim)
    fail("CausalSelfAttention", site, "needs x of shape (B, T, " + std::to_string(dim) + "), got " + shape_str(xs));
  const long B = static_cast<long>(xs[0]), T = static_cast<long>(xs[1]);
  const long H = static_cast<long>(heads), dh = static_cast<long>(head_dim);

  // Projections, each (B, T, C).
  Var q_ = q.forward(x, site);
  Var k_ = k.forward(x, site);
  Var v_ = v.forward(x, site);

  // Split heads: (B, T, C) -> (B, T, H, dh) -> (B, H, T, dh); k goes straight to k^T (B, H, dh, T).
  Var qh = permute(reshape(q_, {B, T, H, dh}), {0, 2, 1, 3});   // (B, H, T, dh)
  Var khT = permute(reshape(k_, {B, T, H, dh}), {0, 2, 3, 1});  // (B, H, dh, T)
  Var vh = permute(reshape(v_, {B, T, H, dh}), {0, 2, 1, 3});   // (B, H, T, dh)

  // scores = q k^T / sqrt(dh)                                     (B, H, T, T)
  Var scores = matmul(qh, khT) * (1.0 / std::sqrt(static_cast<double>(dh)));
  // scores[.., i, j] = -1e9 where j > i; the (T, T) mask broadcasts over B and H
  Var masked = masked_fill(scores, causal_mask(static_cast<std::size_t>(T)), kMaskedScore);
  // att[.., i, :] = softmax(masked[.., i, :]); masked entries become exactly 0
  Var att = softmax(masked, -1).named("att");                    // (B, H, T, T)
  last_att = att;

  Var y = matmul(att, vh);                                       // (B, H, T, dh)
  // Merge heads: (B, H, T, dh) -> (B, T, H, dh) -> (B, T, C)
  Var merged = reshape(permute(y, {0, 2, 1, 3}), {B, T, H * dh});
  return o.forward(merged, site);                                // (B, T, C) = merged Wo + bo
}

}  // namespace gs::nn
