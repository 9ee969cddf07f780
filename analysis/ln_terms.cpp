#include "analysis/ln_terms.hpp"

#include "engine/tape.hpp"
#include "nn/layernorm.hpp"

namespace gs::analysis {

LayerNormTerms layernorm_terms(const Array& x, const Array& weight, const Array& g, double eps) {
  if (x.dimension() == 0 || shape_of(g) != shape_of(x) || weight.dimension() != 1 || weight.size() != x.shape().back())
    throw Error("layernorm_terms: needs x (..., d), weight (d,) and g of x's shape, got x " + shape_str(shape_of(x)) +
                ", weight " + shape_str(shape_of(weight)) + ", g " + shape_str(shape_of(g)));
  const std::size_t d = x.shape().back();
  nn::LayerNormStats stats;  // mu and rstd = 1/sigma per row, as the forward computes them
  nn::layernorm_forward(x, weight, xt::zeros_like(weight), eps, stats);
  LayerNormTerms t{Array::from_shape(shape_of(x)), Array::from_shape(shape_of(x)), Array::from_shape(shape_of(x))};
  const double* xp = x.data();
  const double* gp = g.data();
  const double* w = weight.data();
  for (std::size_t r = 0; r < stats.rstd.size(); ++r) {  // one row (one position) at a time
    const double mu = stats.mu(r), rstd = stats.rstd(r);
    double mean_gh = 0.0, mean_ghx = 0.0;  // mean(g_hat), mean(g_hat x_hat)
    for (std::size_t i = 0; i < d; ++i) {
      const double g_hat = gp[r * d + i] * w[i];
      mean_gh += g_hat;
      mean_ghx += g_hat * (xp[r * d + i] - mu) * rstd;
    }
    mean_gh /= static_cast<double>(d);
    mean_ghx /= static_cast<double>(d);
    for (std::size_t i = 0; i < d; ++i) {
      const std::size_t e = r * d + i;
      const double x_hat = (xp[e] - mu) * rstd;
      t.scale.data()[e] = gp[e] * w[i] * rstd;        //  g_hat / sigma
      t.center.data()[e] = -mean_gh * rstd;           // -mean(g_hat) / sigma
      t.radial.data()[e] = -x_hat * mean_ghx * rstd;  // -x_hat mean(g_hat x_hat) / sigma
    }
  }
  return t;
}

namespace {

// The model's LayerNorm whose module path is `name`; null if that norm is of another kind.
const nn::LayerNorm* layer_norm_at(const nn::TransformerLM& model, const std::string& name) {
  if (name == "ln_f") return dynamic_cast<const nn::LayerNorm*>(model.ln_f.get());
  for (std::size_t l = 0; l < model.blocks.size(); ++l) {
    const nn::Block& b = *model.blocks[l];
    const std::string p = "blocks." + std::to_string(l) + ".";
    if (name == p + "ln1") return dynamic_cast<const nn::LayerNorm*>(b.ln1.get());
    if (name == p + "ln_attn_out") return dynamic_cast<const nn::LayerNorm*>(b.ln_attn_out.get());
    if (name == p + "ln2") return dynamic_cast<const nn::LayerNorm*>(b.ln2.get());
    if (name == p + "ln_mlp_out") return dynamic_cast<const nn::LayerNorm*>(b.ln_mlp_out.get());
  }
  throw Error("layernorm_site_terms: the model has no norm named '" + name + "'");
}

}  // namespace

std::vector<NormSiteTerms> layernorm_site_terms(const nn::TransformerLM& model) {
  std::vector<NormSiteTerms> out;
  for (const nn::NormTrace& trace : model.norm_traces()) {
    const nn::LayerNorm* ln = layer_norm_at(model, trace.name);
    if (!ln) continue;  // RMSNorm or DyT: other terms
    const Array& g = trace.out.grad();  // throws if the last forward had no backward
    const LayerNormTerms t = layernorm_terms(trace.in.value(), ln->weight.value(), g, ln->eps);
    NormSiteTerms site;
    site.name = trace.name;
    site.on_stream = trace.on_stream;
    site.g = gs::norm(g);
    site.scale = gs::norm(t.scale);
    site.center = gs::norm(t.center);
    site.radial = gs::norm(t.radial);
    site.dx = gs::norm(Array(t.scale + t.center + t.radial));
    out.push_back(site);
  }
  return out;
}

}  // namespace gs::analysis
