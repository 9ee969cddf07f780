// The gradient split by path length (analysis/paths.hpp), for every member of the placement zoo, checked
// against a computation that does not use the graded sweep or the edge tags: the ordinary backward with
// some branches cut (nn::cut_gradient on the add's branch input), and inclusion-exclusion.
//
// (the derivation: tests/paths_brute_force.hpp)
#include <cmath>
#include <string>
#include <vector>

#include "check.hpp"
#include "engine/engine.hpp"
#include "analysis/paths.hpp"
#include "nn/interventions.hpp"
#include "nn/transformer_lm.hpp"
#include "nn_gradcheck.hpp"
#include "paths_brute_force.hpp"

namespace test_analysis_paths {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::analysis;

namespace {

const IndexArray path_ids = {{0, 3, 4}, {2, 2, 1}};
const IndexArray path_targets = {{3, 4, 0}, {2, 1, 1}};

using test::binomial;
using test::branch_add;

std::vector<Array> gradients_with_cuts(nn::TransformerLM& model, unsigned kept) {
  return test::gradients_with_cuts(model, kept, path_ids, path_targets);
}

// g_k of emb and of every parameter, k = 0 .. 2L, by the graded sweep: out[array][k].
std::vector<std::vector<Array>> graded(nn::TransformerLM& model) {
  Tape tape;
  TapeScope scope(tape);
  const Var loss = model.loss(path_ids, path_targets);
  const std::vector<TapeEdge> edges = branch_out_edges(tape);
  // The tags are where the traces say the branches end: input 1 of each residual add.
  REQUIRE(edges.size() == 2 * model.blocks.size());
  for (std::size_t i = 0; i < edges.size(); ++i) {
    REQUIRE(edges[i].entry == branch_add(model, i).index());
    REQUIRE(edges[i].input == 1);
  }
  std::vector<Var> wanted = {model.last.emb};
  for (const nn::NamedParameter& p : model.named_parameters()) wanted.push_back(p.parameter.var());
  return graded_backward(loss, edges, edges.size(), wanted);
}

// max |a - b| / max(1, max |b|).
double relative_gap(const Array& a, const Array& b) {
  const double scale = std::max(1.0, static_cast<double>(xt::amax(xt::abs(b))()));
  return static_cast<double>(xt::amax(xt::abs(a - b))()) / scale;
}

}  // namespace

TEST_CASE("every zoo member: the g_k sum to the gradient, and each is the inclusion-exclusion of cut backwards",
          "[analysis][paths]") {
  for (const std::string& member : test::zoo()) {
    for (bool jittered : {false, true}) {
      INFO(member << (jittered ? ", jittered" : ", at init"));
      nn::TransformerLM model(test::gradcheck_config(member));
      if (jittered) test::jitter(model.named_parameters(), 0.2, 11);
      const std::size_t n = 2 * model.blocks.size();  // 4 branches
      const std::vector<std::vector<Array>> g = graded(model);
      std::vector<std::vector<Array>> h;  // h[S][array]
      for (unsigned S = 0; S < (1u << n); ++S) h.push_back(gradients_with_cuts(model, S));
      REQUIRE(g.size() == h[0].size());
      bool higher_order = false;  // some g_k with k >= 2 is not zero: the check reaches past one branch
      for (std::size_t a = 0; a < g.size(); ++a) {
        INFO("array " << a << " (0: emb, then named_parameters)");
        Array sum = xt::zeros_like(g[a][0]);
        for (const Array& gk : g[a]) sum += gk;
        REQUIRE(relative_gap(sum, h[(1u << n) - 1][a]) < test::tol(1e-12, 1e-5));  // nothing cut: the ordinary gradient
        for (std::size_t k = 0; k <= n; ++k) {
          INFO("k = " << k);
          Array brute = xt::zeros_like(g[a][k]);
          for (unsigned S = 0; S < (1u << n); ++S) {
            const auto s = static_cast<std::size_t>(__builtin_popcount(S));
            if (s > k) continue;
            const double sign = (k - s) % 2 == 0 ? 1.0 : -1.0;
            brute += sign * binomial(n - s, k - s) * h[S][a];
          }
          REQUIRE(relative_gap(g[a][k], brute) < test::tol(1e-12, 1e-5));
          if (k >= 2 && xt::amax(xt::abs(g[a][k]))() > 1e-8) higher_order = true;
        }
      }
      // At init ReZero's branches are multiplied by 0: only paths through one branch (its scalar a) are left.
      if (jittered || !member.ends_with("rezero")) REQUIRE(higher_order);
    }
  }
}

TEST_CASE("path_split: norms, projection shares that sum to 1, the overlap and the mean length", "[analysis][paths]") {
  // g_0 = (1, 0), g_1 = (0, 2): orthogonal parts of g = (1, 2).
  const PathSplit a = path_split({{Array{1.0, 0.0}, Array{0.0, 2.0}}});
  REQUIRE(a.norm == std::vector<double>{1.0, 2.0});
  REQUIRE(a.total == Approx(std::sqrt(5.0)));
  REQUIRE(a.share[0] == Approx(0.2));
  REQUIRE(a.share[1] == Approx(0.8));
  REQUIRE(a.overlap == Approx(1.0));
  REQUIRE(a.mean_length == Approx(2.0 / 3.0));
  // g_0 = (1, 0), g_1 = (-1, 1): g = (0, 1); g_0 is orthogonal to g and g_1 cancels it.
  const PathSplit b = path_split({{Array{1.0, 0.0}, Array{-1.0, 1.0}}});
  REQUIRE(b.share[0] == Approx(0.0).margin(1e-15));
  REQUIRE(b.share[1] == Approx(1.0));
  REQUIRE(b.overlap == Approx(3.0));
  // Two arrays taken as one vector: (1 | 2) and (0 | 2) for g_0, g_1.
  const PathSplit c = path_split({{Array{1.0}, Array{0.0}}, {Array{2.0}, Array{2.0}}});
  REQUIRE(c.norm[0] == Approx(std::sqrt(5.0)));
  REQUIRE(c.norm[1] == Approx(2.0));
  REQUIRE(c.share[0] + c.share[1] == Approx(1.0));
  REQUIRE_THROWS_WITH(path_split({{Array{1.0}}, {Array{1.0}, Array{2.0}}}), Catch::Contains("path_split"));
}

TEST_CASE("path_profile: Pre-LN's pure skip path is the identity, Post-LN's is not", "[analysis][paths]") {
  for (const char* spec : {"pre", "post"}) {
    INFO(spec);
    nn::TransformerLM model(test::gradcheck_config(spec));
    Tape tape;
    TapeScope scope(tape);
    const Var loss = model.loss(path_ids, path_targets);
    const PathProfile p = path_profile(model, loss);
    REQUIRE(p.max_length == 4);
    REQUIRE(p.emb.norm.size() == 5);
    REQUIRE(p.top.share[0] == Approx(1.0));  // every path from the top of the stream is of length 0
    double shares = 0.0;
    for (double s : p.emb.share) shares += s;
    REQUIRE(shares == Approx(1.0).epsilon(test::tol(1e-12, 1e-5)));
    REQUIRE(p.blocks.size() == 2);
    if (std::string(spec) == "pre") {
      REQUIRE(p.skip_gain == 1.0);                 // g_0(emb) = g(top), element for element
      REQUIRE(p.blocks[0].norm[0] == 0.0);         // every parameter of a Pre-LN block sits in a branch
    } else {
      REQUIRE(std::abs(p.skip_gain - 1.0) > 0.01);  // each path crosses the four LayerNorms
      REQUIRE(p.blocks[0].norm[0] > 0.0);           // the LayerNorms' own parameters sit on the skip path
    }
    // A second forward on the same tape doubles the tagged edges: refused.
    model.loss(path_ids, path_targets);
    REQUIRE_THROWS_WITH(path_profile(model, loss), Catch::Contains("path_profile at test_analysis_paths.cpp") &&
                                                       Catch::Contains("8 edges tagged branch-out"));
  }
}

}  // namespace test_analysis_paths
