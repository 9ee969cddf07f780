#include "analysis/collapse.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include "analysis/step_measures.hpp"
#include "analysis/stream_split.hpp"
#include "engine/error.hpp"

namespace gs::analysis {
namespace {

// x must be (B, T, C) with T >= min_positions.
void require_sequences(const Array& x, std::size_t min_positions, const char* op, const Site& site) {
  if (x.dimension() != 3 || x.shape(0) == 0 || x.shape(1) < min_positions || x.shape(2) == 0)
    fail(op, site, "expects (B, T, C) with B, C >= 1 and T >= " + std::to_string(min_positions) + ", got " +
                       shape_str(Shape(x.shape().begin(), x.shape().end())));
}

// G = x_b x_b^T (T, T): G(t, s) = x_b,t . x_b,s
Array gram(const Array& x, std::size_t b) {
  const Array rows = xt::view(x, b, xt::all(), xt::all());  // (T, C)
  return xt::linalg::dot(rows, xt::transpose(rows));
}

}  // namespace

double position_cosine(const Array& x, Site site) {
  require_sequences(x, 2, "position_cosine", site);
  const std::size_t B = x.shape(0), T = x.shape(1);
  double total = 0.0;
  for (std::size_t b = 0; b < B; ++b) {
    const Array G = gram(x, b);
    double sum = 0.0;  // sum over t != s of G(t, s) / (|x_t| |x_s|); a zero row counts as cosine 0
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t s = 0; s < T; ++s) {
        const double norms = std::sqrt(G(t, t) * G(s, s));
        if (t != s && norms > 0) sum += G(t, s) / norms;
      }
    total += sum / static_cast<double>(T * (T - 1));
  }
  return total / static_cast<double>(B);
}

double top_direction_share(const Array& x, Site site) {
  require_sequences(x, 1, "top_direction_share", site);
  const std::size_t B = x.shape(0);
  double total = 0.0;
  for (std::size_t b = 0; b < B; ++b) {
    // The eigenvalues of G = x_b x_b^T are the squared singular values of x_b; trace G = sum of them.
    const Array G = gram(x, b);
    const Array lambdas = xt::linalg::eigvalsh(G);  // ascending
    const double energy = xt::sum(lambdas)();
    total += energy > 0 ? lambdas(lambdas.size() - 1) / energy : 0.0;
  }
  return total / static_cast<double>(B);
}

double shared_share(const Array& x, Site site) {
  require_sequences(x, 1, "shared_share", site);
  const std::size_t B = x.shape(0), T = x.shape(1), C = x.shape(2);
  const Real* a = x.data();  // an Array is contiguous, row-major: a[(b T + t) C + c] = x(b, t, c)
  std::vector<double> sum(C);
  double total = 0.0;
  for (std::size_t b = 0; b < B; ++b) {
    double energy = 0.0, shared = 0.0;  // sum_t |x_t|^2 and T |m|^2 = |sum_t x_t|^2 / T
    std::fill(sum.begin(), sum.end(), 0.0);
    for (std::size_t t = 0; t < T; ++t) {
      const Real* row = a + (b * T + t) * C;
      for (std::size_t c = 0; c < C; ++c) sum[c] += row[c], energy += row[c] * row[c];
    }
    for (double s : sum) shared += s * s / static_cast<double>(T);
    total += energy > 0 ? shared / energy : 0.0;
  }
  return total / static_cast<double>(B);
}

double dead_unit_fraction(const Array& pre_activation, Site site) {
  require_sequences(pre_activation, 1, "dead_unit_fraction", site);
  const std::size_t U = pre_activation.shape(2), rows = pre_activation.size() / U;
  const Real* z = pre_activation.data();  // contiguous, row-major: a row of U units per (b, t)
  std::vector<char> fires(U, 0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t u = 0; u < U; ++u) fires[u] |= z[r * U + u] > 0;
  const auto dead = std::count(fires.begin(), fires.end(), 0);
  return static_cast<double>(dead) / static_cast<double>(U);
}

std::vector<double> attention_entropy_share(const nn::TransformerLM& model) {
  const std::vector<double> entropy = attention_entropy(model);  // block-major, one per head
  std::vector<double> share;
  for (std::size_t i = 0; i < model.blocks.size(); ++i) {
    const std::size_t H = model.blocks[i]->attn.last_att.value().shape(1);
    const std::size_t T = model.blocks[i]->attn.last_att.value().shape(2);
    double uniform = 0.0;  // query t attends to t + 1 keys
    for (std::size_t t = 0; t < T; ++t) uniform += std::log(static_cast<double>(t + 1));
    uniform /= static_cast<double>(T);
    double mean = 0.0;
    for (std::size_t h = 0; h < H; ++h) mean += entropy.at(i * H + h);
    mean /= static_cast<double>(H);
    share.push_back(uniform > 0 ? mean / uniform : NAN);  // T = 1: a single key, no choice to measure
  }
  return share;
}

std::vector<BlockCollapse> block_collapse(const nn::TransformerLM& model, bool top_share) {
  const std::vector<double> entropy = attention_entropy_share(model);
  // A branch's shared share, NaN for a branch that is 0 (rezero's a = 0): its energy is 0.
  const auto shared_of = [](const Array& branch, double branch_rms) {
    return branch_rms > 0 ? shared_share(branch) : NAN;
  };
  // rms(branch) / rms(skip), NaN for a skip that is 0.
  const auto to_skip = [](double branch_rms, const Array& skip) {
    const double s = rms(skip);
    return s > 0 ? branch_rms / s : NAN;
  };
  std::vector<BlockCollapse> out;
  for (std::size_t i = 0; i < model.blocks.size(); ++i) {
    const nn::Block& block = *model.blocks[i];
    const nn::BlockTrace& t = block.last;
    // fc1's pre-activation z = mlp_in W1 + b1: (B, T, C) x (C, d_ff) -> (B, T, d_ff)
    const Array& h = t.mlp_in.value();
    const std::size_t B = h.shape(0), T = h.shape(1), C = h.shape(2);
    const std::size_t U = block.mlp.fc1.out_features;
    Array rows = h;  // a copy, reshaped (a view would be copied element by element inside dot)
    rows.reshape({B * T, C});
    Array z = xt::linalg::dot(rows, block.mlp.fc1.weight.value());  // (B T, d_ff)
    const Array& b1 = block.mlp.fc1.bias.value();
    for (std::size_t r = 0; r < B * T; ++r)  // + b1, row by row (a broadcast add costs as much as the product)
      for (std::size_t u = 0; u < U; ++u) z.data()[r * U + u] += b1.data()[u];
    z.reshape({B, T, U});
    const Array& y = t.out.value();
    const double attn_rms = rms(t.attn_branch.value()), mlp_rms = rms(t.mlp_branch.value());
    out.push_back({T >= 2 ? position_cosine(y) : NAN, top_share ? top_direction_share(y) : NAN,
                   shared_of(t.attn_branch.value(), attn_rms), shared_of(t.mlp_branch.value(), mlp_rms),
                   to_skip(attn_rms, t.attn_skip.value()), to_skip(mlp_rms, t.mlp_skip.value()), dead_unit_fraction(z),
                   entropy[i]});
  }
  return out;
}

Predictions predictions(const Array& logits, const std::vector<double>& unigram, Site site) {
  require_sequences(logits, 1, "predictions", site);
  const std::size_t B = logits.shape(0), T = logits.shape(1), V = logits.shape(2);
  if (unigram.size() != V)
    fail("predictions", site, "logits have " + std::to_string(V) + " symbols, the unigram distribution " +
                                  std::to_string(unigram.size()));
  double entropy = 0.0, kl = 0.0;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      double top = logits(b, t, 0);  // log p_v = z_v - log Z, log Z = top + log sum_v exp(z_v - top)
      for (std::size_t v = 1; v < V; ++v) top = std::max<double>(top, logits(b, t, v));
      double sum = 0.0;
      for (std::size_t v = 0; v < V; ++v) sum += std::exp(logits(b, t, v) - top);
      const double log_z = top + std::log(sum);
      for (std::size_t v = 0; v < V; ++v) {
        const double log_p = logits(b, t, v) - log_z, p = std::exp(log_p);
        if (p > 0) entropy -= p * log_p;                                       // 0 log 0 = 0
        if (unigram[v] > 0) kl += unigram[v] * (std::log(unigram[v]) - log_p);  // the same for u_v = 0
      }
    }
  const double n = static_cast<double>(B * T);
  return {entropy / n, kl / n};
}

Collapse collapse_on(nn::TransformerLM& model, const IndexArray& inputs, const std::vector<double>& unigram) {
  Tape& tape = Tape::current();
  NoGradScope no_grad(tape);
  tape.reset();
  const Array logits = model.logits(inputs).value();
  Collapse c{block_collapse(model, false), predictions(logits, unigram)};
  tape.reset();
  return c;
}

}  // namespace gs::analysis
