#include "analysis/paths.hpp"

#include <cmath>

#include "engine/tape.hpp"
#include "nn/residual_edges.hpp"

namespace gs::analysis {

std::vector<TapeEdge> branch_out_edges(const Tape& tape) {
  std::vector<TapeEdge> out;
  for (std::size_t j = 0; j < tape.size(); ++j) {
    const int i = static_cast<int>(j);
    for (std::size_t k = 0; k < tape.entry(i).inputs.size(); ++k)
      if (tape.tag(i, k) == nn::branch_out_edge) out.push_back({i, k});
  }
  return out;
}

namespace {

// <a, b> summed over the arrays of a group: a[x], b[x] of the same shapes.
double group_dot(const std::vector<const Array*>& a, const std::vector<const Array*>& b) {
  double s = 0.0;
  for (std::size_t x = 0; x < a.size(); ++x) {
    const Real* p = a[x]->data();
    const Real* q = b[x]->data();
    for (std::size_t e = 0; e < a[x]->size(); ++e) s += p[e] * q[e];
  }
  return s;
}

}  // namespace

PathSplit path_split(const std::vector<std::vector<Array>>& coefficients) {
  if (coefficients.empty()) throw Error("path_split: no arrays given");
  const std::size_t terms = coefficients.front().size();  // K + 1
  std::vector<Array> whole;                                 // g = sum_k g_k, per array
  for (const std::vector<Array>& c : coefficients) {
    if (c.size() != terms || terms == 0)
      throw Error("path_split: every array needs the same number of coefficients (" + std::to_string(terms) +
                  "), one has " + std::to_string(c.size()));
    Array g = c[0];
    for (std::size_t k = 1; k < terms; ++k) g += c[k];
    whole.push_back(std::move(g));
  }
  std::vector<const Array*> g;
  for (const Array& a : whole) g.push_back(&a);
  PathSplit s;
  const double gg = group_dot(g, g);
  s.total = std::sqrt(gg);
  double sum_sq = 0.0, sum_norm = 0.0, weighted = 0.0;
  for (std::size_t k = 0; k < terms; ++k) {
    std::vector<const Array*> gk;
    for (const std::vector<Array>& c : coefficients) gk.push_back(&c[k]);
    const double kk = group_dot(gk, gk);
    s.norm.push_back(std::sqrt(kk));
    s.share.push_back(gg > 0.0 ? group_dot(gk, g) / gg : 0.0);
    sum_sq += kk;
    sum_norm += s.norm.back();
    weighted += static_cast<double>(k) * s.norm.back();
  }
  s.overlap = gg > 0.0 ? sum_sq / gg : 0.0;
  s.mean_length = sum_norm > 0.0 ? weighted / sum_norm : 0.0;
  return s;
}

PathProfile path_profile(const nn::TransformerLM& model, const Var& loss, Site site) {
  const std::size_t L = model.blocks.size();
  if (L == 0 || model.last.emb.index() < 0 || model.blocks.back()->last.out.index() < 0)
    fail("path_profile", site, "the model has no forward on the tape");
  Tape& tape = loss.tape(site);
  const std::vector<TapeEdge> edges = branch_out_edges(tape);
  if (edges.size() != 2 * L)
    fail("path_profile", site, "the tape has " + std::to_string(edges.size()) + " edges tagged branch-out, and a " +
                                   std::to_string(L) + "-block model has 2L = " + std::to_string(2 * L) +
                                   " (one forward on a fresh tape, please)");
  // The Vars wanted: emb, the top, then every parameter of every block (their leaves on this tape).
  std::vector<Var> wanted = {model.last.emb, model.blocks.back()->last.out};
  std::vector<std::size_t> first_of_block;  // index into wanted of block l's first parameter
  for (const auto& block : model.blocks) {
    first_of_block.push_back(wanted.size());
    for (const nn::NamedParameter& p : block->named_parameters()) wanted.push_back(p.parameter.var(site));
  }
  first_of_block.push_back(wanted.size());
  const std::vector<std::vector<Array>> g = graded_backward(loss, edges, 2 * L, wanted, site);

  PathProfile out;
  out.max_length = 2 * L;
  out.emb = path_split({g[0]});
  out.top = path_split({g[1]});
  for (std::size_t l = 0; l < L; ++l)
    out.blocks.push_back(path_split({g.begin() + static_cast<std::ptrdiff_t>(first_of_block[l]),
                                     g.begin() + static_cast<std::ptrdiff_t>(first_of_block[l + 1])}));
  out.skip_gain = out.top.total > 0.0 ? out.emb.norm[0] / out.top.total : 0.0;
  return out;
}

}  // namespace gs::analysis
