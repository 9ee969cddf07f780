#include "experiments/common/probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/tape.hpp"
#include "experiments/common/run.hpp"

namespace gs::experiments {

std::vector<std::string> all_placements() { return {"post", "pre", "peri", "deepnorm", "rezero"}; }

// ---- MarkovBatches ----

MarkovBatches::MarkovBatches(std::size_t vocab, std::size_t batch, std::size_t seq, unsigned seed)
    : batch_(batch), seq_(seq), seed_(seed), data_(dump_corpus(vocab, batch, seq, seed)) {}

nn::Batch MarkovBatches::batch(std::size_t j) const {
  if (j == 0) {  // dump_model's own draw
    std::mt19937_64 rng(seed_);
    return data_.batch(nn::Split::train, batch_, seq_, rng);
  }
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

// ---- StatusLine ----

StatusLine::StatusLine(std::string program, std::size_t total_units)
    : program_(std::move(program)), total_(total_units), terminal_(::isatty(2) != 0) {}

void StatusLine::advance(std::size_t units, const std::string& what) {
  done_ += units;
  const auto now = std::chrono::steady_clock::now();
  if (terminal_) {
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  } else {
    if (done_ < next_plain_) return;
    next_plain_ = done_ + std::max<std::size_t>(1, total_ / 10);
  }
  last_draw_ = now;
  constexpr std::size_t width = 24;
  const std::size_t filled = total_ ? std::min(width, width * done_ / total_) : width;
  std::string bar(filled, '=');
  if (filled < width) {
    bar += '>';
    bar += std::string(width - filled - 1, ' ');
  }
  std::fprintf(stderr, "%s%s [%s] %zu/%zu  %s%s", terminal_ ? "\r" : "", program_.c_str(), bar.c_str(), done_, total_,
               what.c_str(), terminal_ ? "\x1b[K" : "\n");
  std::fflush(stderr);
  open_ = terminal_;
}

void StatusLine::finish() {
  if (open_) std::fputc('\n', stderr);
  open_ = false;
}

}  // namespace gs::experiments
