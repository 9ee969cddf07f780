#include "nn/attention.hpp"

#include <algorithm>
#include <cmath>

#include "engine/engine.hpp"
#include "engine/kernels/vector_math.hpp"

namespace gs::nn {
namespace {

// mask(i, j) = true where key position j lies after query position i: the future, hidden.
Mask causal_mask(std::size_t T) {
  Mask mask = xt::zeros<bool>({T, T});
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = i + 1; j < T; ++j) mask(i, j) = true;
  return mask;
}

// q, k or v (B, T, C) with C = heads * dh: throws naming the op, the shapes and the call site.
void check_heads(const char* op, const Shape& a, const Shape& b, std::size_t heads, const Site& site) {
  if (a.size() != 3 || b != a || heads == 0 || a[2] % heads != 0)
    fail(op, site, "needs two arrays of one shape (B, T, C) with C divisible by heads = " + std::to_string(heads) +
                       ", got " + shape_str(a) + " and " + shape_str(b));
}

}  // namespace

// ---- the plain formulation: one engine op per step of the math ----

Var attention_composite(const Var& q_, const Var& k_, const Var& v_, std::size_t heads, Var* att_out, Site site) {
  const Shape xs = q_.shape(site);
  check_heads("attention_composite", xs, k_.shape(site), heads, site);
  check_heads("attention_composite", xs, v_.shape(site), heads, site);
  const long B = static_cast<long>(xs[0]), T = static_cast<long>(xs[1]);
  const long H = static_cast<long>(heads), dh = static_cast<long>(xs[2] / heads);

  // Split heads: (B, T, C) -> (B, T, H, dh) -> (B, H, T, dh); k goes straight to k^T (B, H, dh, T).
  Var qh = permute(reshape(q_, {B, T, H, dh}), {0, 2, 1, 3});   // (B, H, T, dh)
  Var khT = permute(reshape(k_, {B, T, H, dh}), {0, 2, 3, 1});  // (B, H, dh, T)
  Var vh = permute(reshape(v_, {B, T, H, dh}), {0, 2, 1, 3});   // (B, H, T, dh)

  // scores = q k^T / sqrt(dh)                                     (B, H, T, T)
  Var scores = matmul(qh, khT) * (1.0 / std::sqrt(static_cast<double>(dh)));
  // scores[.., i, j] = -1e9 where j > i; the (T, T) mask broadcasts over B and H
  Var masked = masked_fill(scores, causal_mask(static_cast<std::size_t>(T)), kMaskedScore);
  // att[.., i, :] = softmax(masked[.., i, :]); masked entries become exactly 0
  Var att = softmax(masked, -1);                                  // (B, H, T, T)
  if (att_out) *att_out = att;

  Var y = matmul(att, vh);                                       // (B, H, T, dh)
  // Merge heads: (B, H, T, dh) -> (B, T, H, dh) -> (B, T, C)
  return reshape(permute(y, {0, 2, 1, 3}), {B, T, H * dh});
}

// ---- the fused ops' arithmetic ----
// Head h of q (B, T, C) is the column block q[b, :, h*dh : (h+1)*dh]: a (T, dh) matrix whose rows are
// C apart in memory. BLAS takes that row stride (lda = C) directly, so no head is ever copied out.

Array attention_weights_forward(const Array& q, const Array& k, std::size_t heads) {
  const std::size_t B = q.shape()[0], T = q.shape()[1], C = q.shape()[2], dh = C / heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  // Per batch b and head h, with Q, K the head's (T, dh) blocks and S, A its (T, T) matrices:
  //   S = Q K^T / sqrt(dh)                                    (one gemm, the scale as its alpha)
  //   A[i, j] = e^(S[i, j] - m_i) / sum_{l <= i} e^(S[i, l] - m_i)  for j <= i,  m_i = max_{l <= i} S[i, l]
  //   A[i, j] = 0 for j > i                                   (the causal mask: the future is hidden)
  Array att = Array::from_shape({B, heads, T, T});  // (B, H, T, T)
  for (std::size_t b = 0; b < B && T > 0; ++b)
    for (std::size_t h = 0; h < heads; ++h) {
      const Real* Q = q.data() + b * T * C + h * dh;
      const Real* K = k.data() + b * T * C + h * dh;
      Real* A = att.data() + (b * heads + h) * T * T;
      if (dh > 0)
        gemm(false, true, T, T, dh, scale, Q, C, K, C, 0.0, A, T);
      else
        std::fill(A, A + T * T, 0.0);  // no features: every score is 0
      for (std::size_t i = 0; i < T; ++i) {
        Real* row = A + i * T;
        const double m = *std::max_element(row, row + i + 1);
        kernels::exp_shifted(row, i + 1, m);  // row[j] = e^(row[j] - m), vectorised
        double sum = 0.0;
        for (std::size_t j = 0; j <= i; ++j) sum += row[j];
        for (std::size_t j = 0; j <= i; ++j) row[j] /= sum;
        std::fill(row + i + 1, row + T, 0.0);
      }
    }
  return att;
}

Grads attention_weights_backward(const Array& grad, const Array& att, const Array& q, const Array& k,
                                 std::size_t heads, const std::vector<bool>& needs) {
  const std::size_t B = q.shape()[0], T = q.shape()[1], C = q.shape()[2], dh = C / heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  // Per (b, h), with G = dL/dA:
  //   dS[i, j] = A[i, j] (G[i, j] - sum_l G[i, l] A[i, l])     (softmax; 0 where masked, as A is 0)
  //   dQ = dS K / sqrt(dh),   dK = dS^T Q / sqrt(dh)          (two gemms into the head's columns)
  Array dq = Array::from_shape({B, T, C}), dk = Array::from_shape({B, T, C});  // every head writes its block
  std::vector<Real> dS(T * T);
  for (std::size_t b = 0; b < B && T > 0; ++b)
    for (std::size_t h = 0; h < heads; ++h) {
      const Real* A = att.data() + (b * heads + h) * T * T;
      const Real* G = grad.data() + (b * heads + h) * T * T;
      for (std::size_t i = 0; i < T; ++i) {
        double dot = 0.0;
        for (std::size_t j = 0; j <= i; ++j) dot += G[i * T + j] * A[i * T + j];
        for (std::size_t j = 0; j < T; ++j) dS[i * T + j] = A[i * T + j] * (G[i * T + j] - dot);
      }
      const std::size_t at = b * T * C + h * dh;
      if (dh == 0) continue;
      const Real* Q = q.data() + at;
      const Real* K = k.data() + at;
      if (needs[0]) gemm(false, false, T, dh, T, scale, dS.data(), T, K, C, 0.0, dq.data() + at, C);
      if (needs[1]) gemm(true, false, T, dh, T, scale, dS.data(), T, Q, C, 0.0, dk.data() + at, C);
    }
  return {needs[0] ? std::move(dq) : Array{}, needs[1] ? std::move(dk) : Array{}};
}

Array attention_mix_forward(const Array& att, const Array& v, std::size_t heads) {
  const std::size_t B = v.shape()[0], T = v.shape()[1], C = v.shape()[2], dh = C / heads;
  // y[b, :, head h] = A V, with A = att[b, h] (T, T) and V the head's (T, dh) block of v: heads merged
  // back into (B, T, C) as they are written.
  Array y = Array::from_shape({B, T, C});  // (B, T, C)
  for (std::size_t b = 0; b < B && T > 0; ++b)
    for (std::size_t h = 0; h < heads && dh > 0; ++h) {
      const std::size_t at = b * T * C + h * dh;
      gemm(false, false, T, dh, T, 1.0, att.data() + (b * heads + h) * T * T, T, v.data() + at, C, 0.0,
           y.data() + at, C);
    }
  return y;
}

Grads attention_mix_backward(const Array& grad, const Array& att, const Array& v, std::size_t heads,
                             const std::vector<bool>& needs) {
  const std::size_t B = v.shape()[0], T = v.shape()[1], C = v.shape()[2], dh = C / heads;
  // Per (b, h), with G the head's (T, dh) block of dL/dy:  dA = G V^T,  dV = A^T G.
  Array datt = Array::from_shape({B, heads, T, T}), dv = Array::from_shape({B, T, C});
  if (dh == 0) datt.fill(0.0);  // otherwise every (b, h) block is written below
  for (std::size_t b = 0; b < B && T > 0; ++b)
    for (std::size_t h = 0; h < heads && dh > 0; ++h) {
      const std::size_t at = b * T * C + h * dh, a_at = (b * heads + h) * T * T;
      if (needs[0])
        gemm(false, true, T, T, dh, 1.0, grad.data() + at, C, v.data() + at, C, 0.0, datt.data() + a_at, T);
      if (needs[1])
        gemm(true, false, T, dh, T, 1.0, att.data() + a_at, T, grad.data() + at, C, 0.0, dv.data() + at, C);
    }
  return {needs[0] ? std::move(datt) : Array{}, needs[1] ? std::move(dv) : Array{}};
}

// ---- the fused form on Vars ----

Var attention_weights_fused(const Var& q, const Var& k, std::size_t heads, Site site) {
  check_heads("attention_weights_fused", q.shape(site), k.shape(site), heads, site);
  Array att = attention_weights_forward(q.value(), k.value(), heads);  // (B, H, T, T)
  return q.tape(site).record("attention_weights_fused", {q, k}, std::move(att),
                             [heads](const BackwardArgs& g) -> Grads {
    return attention_weights_backward(g.grad, g.out, g.in(0), g.in(1), heads, g.needs_grad);
  }, site);
}

Var attention_mix_fused(const Var& att, const Var& v, std::size_t heads, Site site) {
  const Shape vs = v.shape(site), as = att.shape(site);
  if (vs.size() != 3 || heads == 0 || vs[2] % heads != 0 || as != Shape{vs[0], heads, vs[1], vs[1]})
    fail("attention_mix_fused", site, "needs att (B, H, T, T) and v (B, T, C) with C = H * dh and H = " +
                                          std::to_string(heads) + ", got att " + shape_str(as) + " and v " +
                                          shape_str(vs));
  Array y = attention_mix_forward(att.value(), v.value(), heads);  // (B, T, C)
  return att.tape(site).record("attention_mix_fused", {att, v}, std::move(y), [heads](const BackwardArgs& g) -> Grads {
    return attention_mix_backward(g.grad, g.in(0), g.in(1), heads, g.needs_grad);
  }, site);
}

Var attention_fused(const Var& q, const Var& k, const Var& v, std::size_t heads, Var* att_out, Site site) {
  Var att = attention_weights_fused(q, k, heads, site);  // (B, H, T, T)
  if (att_out) *att_out = att;
  return attention_mix_fused(att, v, heads, site);       // (B, T, C)
}

// ---- the module ----

CausalSelfAttention::CausalSelfAttention(std::size_t d, std::size_t n_heads, Initializer& init, QkNorm qk_norm)
    : dim(d), heads(n_heads), head_dim(n_heads == 0 ? 0 : d / n_heads),
      q(d, d, init), k(d, d, init), v(d, d, init), o(d, d, init) {
  if (n_heads == 0 || d % n_heads != 0)
    throw Error("CausalSelfAttention: d_model " + std::to_string(d) + " is not divisible by heads " +
                std::to_string(n_heads));
  add_child("q", q);
  add_child("k", k);
  add_child("v", v);
  add_child("o", o);
  if (qk_norm != QkNorm::none) {
    const Norm kind = qk_norm == QkNorm::layer ? Norm::layer : Norm::rms;
    q_norm = make_norm(kind, head_dim, 0.0);
    k_norm = make_norm(kind, head_dim, 0.0);
    add_child("q_norm", *q_norm);
    add_child("k_norm", *k_norm);
  }
}

Var CausalSelfAttention::forward(const Var& x, Site site) {
  const Shape xs = x.shape(site);
  if (xs.size() != 3 || xs[2] != dim)
    fail("CausalSelfAttention", site, "needs x of shape (B, T, " + std::to_string(dim) + "), got " + shape_str(xs));

  // Projections, each (B, T, C).
  Var q_ = q.forward(x, site);
  Var k_ = k.forward(x, site);
  Var v_ = v.forward(x, site);

  // qk-norm: each head's dh features normalized, (B, T, C) -> (B, T, H, dh) -> N -> (B, T, C).
  if (q_norm) {
    const long B = static_cast<long>(xs[0]), T = static_cast<long>(xs[1]);
    const long H = static_cast<long>(heads), dh = static_cast<long>(head_dim);
    auto per_head = [&](const NormLayer& n, const Var& a, const char* name) {
      ModuleScope scope(x.tape(site), name);
      return reshape(n.forward(reshape(a, {B, T, H, dh}, site), site), {B, T, H * dh}, site);
    };
    q_ = per_head(*q_norm, q_, "q_norm");
    k_ = per_head(*k_norm, k_, "k_norm");
  }
  last_q = q_;
  last_k = k_;

  Var merged;  // (B, T, C): every head's att @ v, heads side by side
  if (fused)
    merged = attention_fused(q_, k_, v_, heads, &last_att, site);
  else
    merged = attention_composite(q_, k_, v_, heads, &last_att, site);
  last_att.named("att");  // (B, H, T, T)
  return o.forward(merged, site);  // (B, T, C) = merged Wo + bo
}

}  // namespace gs::nn
