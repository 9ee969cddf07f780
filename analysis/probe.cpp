#include "analysis/probe.hpp"

#include <cmath>
#include <limits>

#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "nn/data/markov.hpp"

namespace gs::analysis {

// ---- MarkovBatches ----

MarkovBatches::MarkovBatches(std::size_t vocab, std::size_t batch, std::size_t seq, unsigned seed)
    : batch_(batch), seq_(seq), seed_(seed), data_(nn::dump_corpus(vocab, batch, seq, seed)) {}

nn::Batch MarkovBatches::batch(std::size_t j) const {
  if (j == 0) return nn::dump_batch(data_, batch_, seq_, seed_);
  std::seed_seq seq{seed_, static_cast<unsigned>(j), 0x6261u};
  std::mt19937_64 rng(seq);
  return data_.batch(nn::Split::train, batch_, seq_, rng);
}

// ---- gradient norms by group ----

const std::vector<std::string>& block_groups() {
  static const std::vector<std::string> groups = {"q", "k", "v", "o", "fc1", "fc2", "ln", "rezero", "block"};
  return groups;
}

std::string block_group(const std::string& name, int* layer) {
  if (layer) *layer = -1;
  const std::string prefix = "blocks.";
  if (name.rfind(prefix, 0) != 0) return "";
  const std::size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos) return "";
  if (layer) *layer = std::stoi(name.substr(prefix.size(), dot - prefix.size()));
  const std::string rest = name.substr(dot + 1);  // e.g. "attn.q.weight"
  for (const char* p : {"q", "k", "v", "o"})
    if (rest == std::string("attn.") + p + ".weight") return p;
  if (rest == "mlp.fc1.weight") return "fc1";
  if (rest == "mlp.fc2.weight") return "fc2";
  const std::string weight = ".weight";
  if (rest.rfind("ln", 0) == 0 && rest.size() > weight.size() &&
      rest.compare(rest.size() - weight.size(), weight.size(), weight) == 0)
    return "ln";
  if (rest.rfind("rezero_", 0) == 0) return "rezero";
  return "";
}

std::string model_group(const std::string& name) {
  for (const char* g : {"tok_emb", "pos_emb", "ln_f", "head"}) {
    const std::string prefix = std::string(g) + ".";
    if (name.rfind(prefix, 0) == 0) return g;
  }
  return "";
}

GradNorms grad_norms(const std::vector<nn::NamedParameter>& parameters, std::size_t layers) {
  // Sums of squares first, square roots at the end.
  GradNorms n;
  n.blocks.resize(layers);
  auto add = [](std::map<std::string, double>& m, const std::string& group, double ss) { m[group] += ss; };
  for (const nn::NamedParameter& p : parameters) {
    const double g = norm(p.parameter.grad());
    const double ss = g * g;
    int layer = -1;
    const std::string group = block_group(p.name, &layer);
    if (layer >= 0) {
      auto& m = n.blocks.at(static_cast<std::size_t>(layer));
      if (!group.empty()) add(m, group, ss);
      add(m, "block", ss);
    } else if (const std::string mg = model_group(p.name); !mg.empty()) {
      add(n.model, mg, ss);
    }
    add(n.model, "total", ss);
  }
  for (auto& m : n.blocks)
    for (auto& [group, value] : m) value = std::sqrt(value);
  for (auto& [group, value] : n.model) value = std::sqrt(value);
  return n;
}

// ---- log-log fit ----

LineFit loglog_fit(const std::vector<double>& x, const std::vector<double>& y) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::size_t n = x.size();
  if (n < 2 || y.size() != n) return {nan, nan};
  double mx = 0.0, my = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(std::isfinite(x[i]) && x[i] > 0.0 && std::isfinite(y[i]) && y[i] > 0.0)) return {nan, nan};
    mx += std::log(x[i]);
    my += std::log(y[i]);
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  // slope = sum (u - mean u)(v - mean v) / sum (u - mean u)^2 with u = log x, v = log y
  double sxy = 0.0, sxx = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double u = std::log(x[i]) - mx, v = std::log(y[i]) - my;
    sxy += u * v;
    sxx += u * u;
  }
  if (sxx == 0.0) return {nan, nan};
  const double slope = sxy / sxx;
  return {slope, my - slope * mx};
}

std::vector<double> depth_slopes(const std::vector<std::size_t>& depths, std::size_t from, std::size_t seeds,
                                 const std::function<double(std::size_t L, std::size_t seed)>& value) {
  std::vector<double> x, out;
  for (std::size_t i = from; i < depths.size(); ++i) x.push_back(static_cast<double>(depths[i]));
  for (std::size_t s = 0; s < seeds; ++s) {
    std::vector<double> y;
    for (std::size_t i = from; i < depths.size(); ++i) y.push_back(value(depths[i], s));
    out.push_back(loglog_fit(x, y).slope);
  }
  return out;
}

std::string depths_text(const std::vector<std::size_t>& depths, std::size_t from) {
  std::string text;
  for (std::size_t i = from; i < depths.size(); ++i) {
    if (i > from) text += ' ';
    text += std::to_string(depths[i]);
  }
  return text;
}

}  // namespace gs::analysis
