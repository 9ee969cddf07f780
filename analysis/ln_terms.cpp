#include "analysis/ln_terms.hpp"

#include "engine/tape.hpp"
#include "nn/layernorm.hpp"
#include "nn/rmsnorm.hpp"

namespace gs::analysis {

namespace {

void check_shapes(const char* op, const Array& x, const Array& weight, const Array& g) {
  if (x.dimension() == 0 || shape_of(g) != shape_of(x) || weight.dimension() != 1 || weight.size() != x.shape().back())
    throw Error(std::string(op) + ": needs x (..., d), weight (d,) and g of x's shape, got x " +
                shape_str(shape_of(x)) + ", weight " + shape_str(shape_of(weight)) + ", g " + shape_str(shape_of(g)));
}

// The terms, row by row, from each row's mean mu[r] and rstd[r] = 1/sigma (LayerNorm) or mu = 0 and
// rstd = 1/rms (RMSNorm, with_center false: its center term stays 0).
NormTerms terms(const Array& x, const Array& weight, const Array& g, const Array& mu, const Array& rstd,
                bool with_center) {
  const std::size_t d = x.shape().back();
  NormTerms t{Array::from_shape(shape_of(x)), xt::zeros<Real>(shape_of(x)), Array::from_shape(shape_of(x))};
  const Real* xp = x.data();
  const Real* gp = g.data();
  const Real* w = weight.data();
  for (std::size_t r = 0; r < rstd.size(); ++r) {  // one row (one position) at a time
    const double mu_r = with_center ? mu(r) : 0.0, rstd_r = rstd(r);
    double mean_gh = 0.0, mean_ghx = 0.0;  // mean(g_hat), mean(g_hat x_hat)
    for (std::size_t i = 0; i < d; ++i) {
      const double g_hat = gp[r * d + i] * w[i];
      mean_gh += g_hat;
      mean_ghx += g_hat * (xp[r * d + i] - mu_r) * rstd_r;
    }
    mean_gh /= static_cast<double>(d);
    mean_ghx /= static_cast<double>(d);
    for (std::size_t i = 0; i < d; ++i) {
      const std::size_t e = r * d + i;
      const double x_hat = (xp[e] - mu_r) * rstd_r;
      t.scale.data()[e] = gp[e] * w[i] * rstd_r;                // g_hat / sigma
      if (with_center) t.center.data()[e] = -mean_gh * rstd_r;  // -mean(g_hat) / sigma
      t.radial.data()[e] = -x_hat * mean_ghx * rstd_r;          // -x_hat mean(g_hat x_hat) / sigma
    }
  }
  return t;
}

}  // namespace

NormTerms layernorm_terms(const Array& x, const Array& weight, const Array& g, double eps) {
  check_shapes("layernorm_terms", x, weight, g);
  nn::LayerNormStats stats;  // mu and rstd = 1/sigma per row, as the forward computes them
  nn::layernorm_forward(x, weight, xt::zeros_like(weight), eps, stats);
  return terms(x, weight, g, stats.mu, stats.rstd, true);
}

NormTerms rmsnorm_terms(const Array& x, const Array& weight, const Array& g, double eps) {
  check_shapes("rmsnorm_terms", x, weight, g);
  Array rstd;  // 1/rms per row, as the forward computes it
  nn::rmsnorm_forward(x, weight, eps, rstd);
  return terms(x, weight, g, rstd, rstd, false);  // mu is not read
}

namespace {

// The model's norm whose module path is `name`.
const nn::NormLayer* norm_at(const nn::TransformerLM& model, const std::string& name) {
  if (name == "ln_f") return model.ln_f.get();
  for (std::size_t l = 0; l < model.blocks.size(); ++l) {
    const nn::Block& b = *model.blocks[l];
    const std::string p = "blocks." + std::to_string(l) + ".";
    if (name == p + "ln1") return b.ln1.get();
    if (name == p + "ln_attn_out") return b.ln_attn_out.get();
    if (name == p + "ln2") return b.ln2.get();
    if (name == p + "ln_mlp_out") return b.ln_mlp_out.get();
  }
  throw Error("norm_site_terms: the model has no norm named '" + name + "'");
}

}  // namespace

std::vector<NormSiteTerms> norm_site_terms(const nn::TransformerLM& model) {
  std::vector<NormSiteTerms> out;
  for (const nn::NormTrace& trace : model.norm_traces()) {
    const nn::NormLayer* norm = norm_at(model, trace.name);
    const auto* ln = dynamic_cast<const nn::LayerNorm*>(norm);
    const auto* rms = dynamic_cast<const nn::RMSNorm*>(norm);
    if (!ln && !rms) continue;  // DyT: no statistics, no terms
    const Array& g = trace.out.grad();  // throws if the last forward had no backward
    const NormTerms t = ln ? layernorm_terms(trace.in.value(), ln->weight.value(), g, ln->eps)
                           : rmsnorm_terms(trace.in.value(), rms->weight.value(), g, rms->eps);
    NormSiteTerms site;
    site.name = trace.name;
    site.on_stream = trace.on_stream;
    site.has_center = ln != nullptr;
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
