// LayerNorm's backward split into its three terms, RMSNorm's into its two, per norm site of a model.
//
// Per row (one position, d features), with x_hat = (x - mu) / sigma, sigma = sqrt(var + eps), the
// gradient g = dL/dy arriving at y = x_hat * w + b and g_hat = g * w (docs/layernorm.md):
//   dL/dx = (1/sigma) (g_hat - mean(g_hat) - x_hat mean(g_hat x_hat))
//         =  scale            +  center              +  radial
//   scale  =  g_hat / sigma                    the gradient through x_hat, rescaled by 1/sigma
//   center = -mean(g_hat) / sigma              (the same for every feature) removes the part that
//                                              would move the row's mean, which y does not see
//   radial = -x_hat mean(g_hat x_hat) / sigma  removes the part along x_hat, which would change the
//                                              row's scale, which y does not see either
// center makes dL/dx orthogonal to the ones vector; radial makes it orthogonal to x_hat up to
// eps / (var + eps) (exactly when eps = 0, where mean(x_hat^2) = 1).
//
// RMSNorm has no mean to remove, so no center term: with x_hat = x / rms, rms = sqrt(mean(x^2) + eps),
//   dL/dx = (1/rms) (g_hat - x_hat mean(g_hat x_hat))  =  scale  +  radial
// the same scale and radial as LayerNorm's with mu = 0 and sigma = rms.
#pragma once

#include <string>
#include <vector>

#include "engine/array.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::analysis {

struct NormTerms {
  Array scale, center, radial;  // each (..., d); scale + center + radial = dL/dx (RMSNorm: center is 0)
};

// x (..., d), weight (d,), g = dL/dy (..., d); throws gs::Error naming the shapes if they differ.
NormTerms layernorm_terms(const Array& x, const Array& weight, const Array& g, double eps);
NormTerms rmsnorm_terms(const Array& x, const Array& weight, const Array& g, double eps);

// One norm of the model's last forward: the Frobenius norms of g = dL/dy, of each term and of their sum.
struct NormSiteTerms {
  std::string name;          // its module path: "blocks.0.ln1", ..., "ln_f"
  bool on_stream = false;    // reads the residual stream (nn::NormTrace::on_stream)
  bool has_center = true;    // LayerNorm; false for RMSNorm, whose center is 0 by definition
  double g = 0.0, scale = 0.0, center = 0.0, radial = 0.0, dx = 0.0;
};

// Every LayerNorm and RMSNorm site of the last forward, in forward order, after an ordinary backward of
// its loss (each site's output needs its gradient). The true gradient: a backward intervention on the
// norms (ln-undo-gain, ln-detach-stats) is not applied. DyT (an elementwise tanh, no statistics) and
// norm none have no sites here.
std::vector<NormSiteTerms> norm_site_terms(const nn::TransformerLM& model);

}  // namespace gs::analysis
