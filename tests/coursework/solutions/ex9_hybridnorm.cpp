// Reference solution of exercise 9 (docs/coursework.md#ex9).
#include "../ex9_hybridnorm.hpp"

#include "engine/engine.hpp"

namespace gs::coursework {

HybridNormBlock::HybridNormBlock(const nn::ModelConfig& config, nn::Initializer& init)
    : attn(config.d_model, config.heads, init), q_norm(config.d_model / config.heads),
      k_norm(config.d_model / config.heads), v_norm(config.d_model / config.heads), ln2(config.d_model),
      mlp(config.d_model, config.ff(), init) {
  add_child("attn", attn);
  add_child("q_norm", q_norm);
  add_child("k_norm", k_norm);
  add_child("v_norm", v_norm);
  add_child("ln2", ln2);
  add_child("mlp", mlp);
}

Var HybridNormBlock::forward(const Var& x, Site site) {
  const Shape s = x.shape(site);
  const long B = static_cast<long>(s[0]), T = static_cast<long>(s[1]);
  const long H = static_cast<long>(attn.heads), dh = static_cast<long>(attn.head_dim);
  // A projection split into heads, each head's dh features normalized, merged back: (B, T, C).
  auto normalized = [&](const nn::Linear& projection, const nn::LayerNorm& norm) {
    Var heads = reshape(projection.forward(x, site), {B, T, H, dh});  // (B, T, H, dh)
    return reshape(norm.forward(heads, site), {B, T, H * dh});         // (B, T, C)
  };
  Var q = normalized(attn.q, q_norm), k = normalized(attn.k, k_norm), v = normalized(attn.v, v_norm);
  Var h = x + attn.o.forward(nn::attention_fused(q, k, v, attn.heads, nullptr, site), site);  // QKV-Norm attention
  Var n = ln2.forward(h, site);                                                                // Post-Norm
  return n + mlp.forward(n, site);                                                             // (B, T, C)
}

}  // namespace gs::coursework
