#include "analysis/step_measures.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "engine/tools/inspect.hpp"
#include "analysis/collapse.hpp"
#include "analysis/stream_split.hpp"

namespace gs::analysis {

std::vector<nn::NormTrace> stream_norm_traces(const nn::TransformerLM& model) {
  std::vector<nn::NormTrace> traces;
  for (const nn::NormTrace& s : model.norm_traces())
    if (s.on_stream) traces.push_back(s);
  return traces;
}

// Parameter groups: 0 the input embedding, 1..L the blocks, L+1 the output (ln_f, head).
std::size_t layer_group(const std::string& name, std::size_t layers) {
  if (name.rfind("tok_emb.", 0) == 0 || name.rfind("pos_emb.", 0) == 0) return 0;
  if (name.rfind("blocks.", 0) == 0) return 1 + std::stoul(name.substr(7));
  return layers + 1;
}

std::vector<std::string> layer_names(std::size_t layers) {
  std::vector<std::string> names = {"emb"};
  for (std::size_t i = 0; i < layers; ++i) names.push_back(std::string("block") += std::to_string(i));
  names.push_back("out");
  return names;
}

// |dL/dW| of each group: sqrt of the sum of the squared gradients of its parameters.
std::vector<double> layer_grad_norms(const nn::TransformerLM& model) {
  const std::size_t L = model.config.layers;
  std::vector<double> sq(L + 2, 0.0);
  for (const nn::NamedParameter& p : model.named_parameters()) {
    const double n = norm(p.parameter.grad());
    sq[layer_group(p.name, L)] += n * n;
  }
  for (double& s : sq) s = std::sqrt(s);
  return sq;
}

std::size_t update_group(const std::string& name, std::size_t layers) {
  const std::size_t layer = layer_group(name, layers);
  if (layer == 0) return 0;
  if (layer == layers + 1) return 3 * layers + 1;
  const std::size_t first = 1 + 3 * (layer - 1);
  if (name.find(".attn.") != std::string::npos) return first;
  if (name.find(".mlp.") != std::string::npos) return first + 1;
  return first + 2;
}

std::vector<std::string> update_group_names(std::size_t layers) {
  std::vector<std::string> names = {"emb"};
  for (std::size_t i = 0; i < layers; ++i)
    for (const char* part : {".attn", ".mlp", ".rest"}) {
      std::string name = "b";  // appended piece by piece: g++ 12 warns falsely (-Wrestrict) on "b" + ...
      name += std::to_string(i);
      name += part;
      names.push_back(name);
    }
  names.push_back("out");
  return names;
}

std::vector<Array> parameter_values(const nn::TransformerLM& model) {
  std::vector<Array> values;
  for (const nn::NamedParameter& p : model.named_parameters()) values.push_back(p.parameter.value());
  return values;
}

std::vector<double> update_ratios(const std::vector<Array>& before, const nn::TransformerLM& model) {
  const std::size_t L = model.config.layers;
  std::vector<double> moved(3 * L + 2, 0.0), size(3 * L + 2, 0.0);  // squared norms per group
  const std::vector<nn::NamedParameter> params = model.named_parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::size_t g = update_group(params[i].name, L);
    const Array delta = params[i].parameter.value() - before.at(i);
    const double step = norm(delta), w = norm(before[i]);
    moved[g] += step * step;
    size[g] += w * w;
  }
  std::vector<double> ratios;
  for (std::size_t g = 0; g < moved.size(); ++g) ratios.push_back(size[g] > 0 ? std::sqrt(moved[g] / size[g]) : NAN);
  return ratios;
}

std::vector<double> attention_entropy(const nn::TransformerLM& model) {
  std::vector<double> entropy;
  for (const auto& block : model.blocks) {
    const Array& att = block->attn.last_att.value();  // (B, H, T, T), row t is zero after column t
    const std::size_t B = att.shape(0), H = att.shape(1), T = att.shape(2);
    for (std::size_t h = 0; h < H; ++h) {
      double sum = 0.0;
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
          for (std::size_t s = 0; s <= t; ++s) {
            const double a = att(b, h, t, s);
            if (a > 0) sum -= a * std::log(a);
          }
      entropy.push_back(sum / static_cast<double>(B * T));
    }
  }
  return entropy;
}

std::vector<double> attention_logit_max(const nn::TransformerLM& model) {
  std::vector<double> out;
  for (const auto& block : model.blocks) {
    const Array& q = block->attn.last_q.value();  // (B, T, C), heads side by side
    const Array& k = block->attn.last_k.value();
    const std::size_t B = q.shape(0), T = q.shape(1), H = block->attn.heads, dh = block->attn.head_dim;
    const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
    for (std::size_t h = 0; h < H; ++h) {
      double m = 0.0;
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
          for (std::size_t s = 0; s <= t; ++s) {  // the unmasked pairs
            double dot = 0.0;
            for (std::size_t f = h * dh; f < (h + 1) * dh; ++f) dot += q(b, t, f) * k(b, s, f);
            m = std::max(m, std::abs(dot * scale));
          }
      out.push_back(m);
    }
  }
  return out;
}

OutputLogits output_logits(const nn::TransformerLM& model) {
  const Array& z = model.last.logits.value();  // (B, T, V)
  const std::size_t V = z.shape(2), rows = z.size() / V;
  OutputLogits o;
  double sum = 0.0, sq = 0.0, mx = -INFINITY;
  for (std::size_t r = 0; r < rows; ++r) {
    const Real* row = z.data() + r * V;
    const double m = *std::max_element(row, row + V);
    double e = 0.0;
    for (std::size_t v = 0; v < V; ++v) e += std::exp(row[v] - m), sq += row[v] * row[v];
    const double log_z = m + std::log(e);  // logsumexp, stable
    sum += log_z;
    mx = std::max(mx, log_z);
  }
  o.log_z_mean = sum / static_cast<double>(rows);
  o.log_z_max = mx;
  o.rms = std::sqrt(sq / static_cast<double>(z.size()));
  return o;
}

// The logits on the probe batch, with the model as it is now.
Array probe_logits(nn::TransformerLM& model, const nn::Batch& probe) {
  Tape& tape = Tape::current();
  NoGradScope no_grad(tape);
  tape.reset();
  Array logits = model.logits(probe.inputs).value();
  tape.reset();
  return logits;
}

// ---- the early window ----

double spectral_norm(const Array& a, double tol, std::size_t max_iterations) {
  std::vector<double> start;
  return spectral_norm(a, start, tol, max_iterations);
}

double spectral_norm(const Array& a, std::vector<double>& v, double tol, std::size_t max_iterations) {
  if (a.dimension() != 2) throw std::invalid_argument("spectral_norm: needs a 2-D array");
  const std::size_t m = a.shape(0), n = a.shape(1);
  const Array A = a;  // contiguous, row-major
  const Real* p = A.data();
  if (std::all_of(p, p + A.size(), [](double x) { return x == 0.0; })) return 0.0;
  // The fixed v0: all entries different and positive (a start orthogonal to the top right singular
  // vector would need an exact cancellation), normalised below.
  if (v.size() != n) {
    v.resize(n);
    for (std::size_t j = 0; j < n; ++j) v[j] = 1.0 + std::fmod(0.6180339887498949 * static_cast<double>(j + 1), 1.0);
  }
  std::vector<double> u(m);
  double sigma = 0.0;
  for (std::size_t it = 0; it < max_iterations; ++it) {
    double vv = 0.0;
    for (double x : v) vv += x * x;
    for (double& x : v) x /= std::sqrt(vv);
    for (std::size_t i = 0; i < m; ++i) {  // u = A v
      double s = 0.0;
      for (std::size_t j = 0; j < n; ++j) s += p[i * n + j] * v[j];
      u[i] = s;
    }
    std::fill(v.begin(), v.end(), 0.0);  // v = A^T u
    double uu = 0.0;
    for (std::size_t i = 0; i < m; ++i) {
      uu += u[i] * u[i];
      for (std::size_t j = 0; j < n; ++j) v[j] += p[i * n + j] * u[i];
    }
    double ww = 0.0;
    for (double x : v) ww += x * x;
    if (uu == 0.0) return 0.0;  // v0 in A's null space: not reached for a nonzero A in practice
    // |A^T A v| / |A v| for the unit v: between |A v| and sigma_max, and rising with the iterations.
    const double next = std::sqrt(ww / uu);
    if (it > 0 && std::abs(next - sigma) <= tol * next) return next;
    sigma = next;
  }
  return sigma;
}

std::vector<std::string> spectral_group_names(std::size_t layers) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < layers; ++i)
    for (const char* part : {".attn", ".mlp"}) {
      std::string name = "b";
      name += std::to_string(i);
      name += part;
      names.push_back(name);
    }
  return names;
}

std::vector<double> spectral_update_ratios(const std::vector<Array>& before, const nn::TransformerLM& model,
                                           SpectralStarts* starts) {
  const std::size_t L = model.config.layers;
  std::vector<double> ratios(2 * L, NAN);
  const std::vector<nn::NamedParameter> params = model.named_parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::size_t layer = layer_group(params[i].name, L), part = (update_group(params[i].name, L) + 2) % 3;
    if (layer == 0 || layer > L || part == 2 || before.at(i).dimension() != 2) continue;  // part: 0 attn, 1 mlp, 2 rest
    std::vector<double> fresh_w, fresh_d;
    std::vector<double>& start_w = starts ? (*starts)[params[i].name].first : fresh_w;
    std::vector<double>& start_d = starts ? (*starts)[params[i].name].second : fresh_d;
    const double w = spectral_norm(before[i], start_w);
    const double r = w > 0 ? spectral_norm(Array(params[i].parameter.value() - before[i]), start_d) / w : NAN;
    double& g = ratios[2 * (layer - 1) + part];
    g = std::isnan(g) ? r : std::max(g, r);
  }
  return ratios;
}

std::vector<Array> parameter_grads(const nn::TransformerLM& model) {
  std::vector<Array> grads;
  for (const nn::NamedParameter& p : model.named_parameters()) grads.push_back(p.parameter.grad());
  return grads;
}

double linear_change(const std::vector<Array>& grads, const std::vector<Array>& before, const nn::TransformerLM& model) {
  const std::vector<nn::NamedParameter> params = model.named_parameters();
  double sum = 0.0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Array& now = params[i].parameter.value();
    const Array& g = grads.at(i);
    for (std::size_t j = 0; j < now.size(); ++j) sum += g.flat(j) * (now.flat(j) - before.at(i).flat(j));
  }
  return sum;
}

double last_loss(const nn::TransformerLM& model) {
  double loss = model.last.ce.value()();
  if (model.z_loss == 0.0) return loss;
  const Array& log_z = model.last.log_z.value();  // (B, T)
  double sq = 0.0;
  for (double z : log_z) sq += z * z;
  return loss + model.z_loss * sq / static_cast<double>(log_z.size());
}

double loss_now(nn::TransformerLM& model, const nn::Batch& batch) {
  Tape& tape = Tape::current();
  NoGradScope no_grad(tape);
  tape.reset();
  model.loss(batch.inputs, batch.targets);
  const double loss = last_loss(model);
  tape.reset();
  return loss;
}

const Array& head_input(const nn::TransformerLM& model) {
  return model.has_final_norm() ? model.last.final_norm.value() : model.blocks.back()->last.out.value();
}

double token_share(const Array& h, const IndexArray& ids) {
  const std::size_t C = h.shape(h.dimension() - 1), N = h.size() / C;
  if (ids.size() != N) throw std::invalid_argument("token_share: ids must have one token per row of h");
  std::vector<double> mean(C, 0.0);
  std::map<std::int64_t, std::pair<std::size_t, std::vector<double>>> groups;  // token -> (n_k, sum of its rows)
  for (std::size_t n = 0; n < N; ++n) {
    auto& [count, sum] = groups[ids.flat(n)];
    if (sum.empty()) sum.assign(C, 0.0);
    ++count;
    for (std::size_t c = 0; c < C; ++c) sum[c] += h.flat(n * C + c), mean[c] += h.flat(n * C + c);
  }
  for (double& m : mean) m /= static_cast<double>(N);
  double total = 0.0, between = 0.0;
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t c = 0; c < C; ++c) total += std::pow(h.flat(n * C + c) - mean[c], 2);
  for (const auto& [token, group] : groups)
    for (std::size_t c = 0; c < C; ++c)
      between += static_cast<double>(group.first) * std::pow(group.second[c] / static_cast<double>(group.first) - mean[c], 2);
  return total > 0 ? between / total : NAN;
}

ProbePass probe_pass(nn::TransformerLM& model, const nn::Batch& probe) {
  Tape& tape = Tape::current();
  NoGradScope no_grad(tape);
  tape.reset();
  ProbePass pass;
  pass.logits = model.logits(probe.inputs).value();
  pass.token_share = token_share(head_input(model), probe.inputs);
  tape.reset();
  return pass;
}

// |dL/dx| of the part of x's gradient that came back through the norm alone: in pre and peri the
// stream x also gets gradient through the skip path, which is not the norm's doing. The norm's
// entries carry its name as their scope (a fused norm is one entry, a composite one several), so
// that part is the sum of what the entries of that scope sent into x. Needs keep_contributions.
double through_norm(const nn::NormTrace& s) {
  Array sum;
  bool any = false;
  for (const ContributionInfo& c : contributions(s.in)) {
    if (c.scope != s.name && c.scope.rfind(s.name + ".", 0) != 0) continue;
    sum = any ? Array(sum + c.grad) : c.grad;
    any = true;
  }
  return any ? gs::norm(sum) : 0.0;
}

// What the forward and backward pass of this step left on the tape.
void read_tape(const nn::TransformerLM& model, StepRecord& r) {
  r.layer_grad = layer_grad_norms(model);
  for (const nn::NormTrace& s : stream_norm_traces(model)) {
    r.ln_rms.push_back(rms(s.in.value()));
    r.ln_gain.push_back(through_norm(s) / norm(s.out.grad()));
  }
  r.att_entropy = attention_entropy(model);
  r.att_logit_max = attention_logit_max(model);
  const OutputLogits o = output_logits(model);
  r.log_z_mean = o.log_z_mean, r.log_z_max = o.log_z_max, r.logit_rms = o.rms;
}

void read_collapse(const nn::TransformerLM& model, StepRecord& r, bool top_share) {
  for (const BlockCollapse& c : block_collapse(model, top_share)) {
    r.out_cosine.push_back(c.out_cosine);
    r.out_top_share.push_back(c.out_top_share);
    r.attn_shared.push_back(c.attn_shared_share);
    r.mlp_shared.push_back(c.mlp_shared_share);
    r.attn_branch_skip.push_back(c.attn_branch_to_skip);
    r.mlp_branch_skip.push_back(c.mlp_branch_to_skip);
    r.dead_units.push_back(c.dead_units);
    r.att_entropy_share.push_back(c.entropy_share);
  }
}

}  // namespace gs::analysis
