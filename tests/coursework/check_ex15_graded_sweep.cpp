// The check of exercise 15, for the student: scripts/exercise 15 (docs/coursework.md#ex15)
#include <string>
#include <vector>

#include "../paths_brute_force.hpp"
#include "engine/engine.hpp"
#include "ex15_graded_sweep.hpp"
#include "exercise.hpp"
#include "nn/transformer_lm.hpp"

namespace check_ex15_graded_sweep {  // one namespace per test file: the files compile in groups

using namespace gs;

namespace {

const IndexArray ids = {{1, 2, 3, 4}, {5, 6, 0, 1}};
const IndexArray targets = {{2, 3, 4, 5}, {6, 0, 1, 2}};

// Your g_k of emb and of every parameter (named_parameters order), k = 0 .. K, every branch output marked.
std::vector<std::vector<Array>> your_parts(nn::TransformerLM& model, std::size_t K) {
  Tape tape;
  TapeScope scope(tape);
  const Var loss = model.loss(ids, targets);
  std::vector<TapeEdge> marked;
  for (std::size_t i = 0; i < 2 * model.blocks.size(); ++i) marked.push_back({test::branch_add(model, i).index(), 1});
  std::vector<int> wanted = {model.last.emb.index()};
  for (const nn::NamedParameter& p : model.named_parameters()) wanted.push_back(p.parameter.var().index());
  return coursework::graded_sweep(tape, loss.index(), marked, K, wanted);
}

// g_k by inclusion-exclusion over the 2^n backwards with branches cut (tests/paths_brute_force.hpp).
std::vector<std::vector<Array>> brute_parts(nn::TransformerLM& model) {
  const std::size_t n = 2 * model.blocks.size();
  std::vector<std::vector<Array>> h;
  for (unsigned S = 0; S < (1u << n); ++S) h.push_back(test::gradients_with_cuts(model, S, ids, targets));
  return test::brute_force_parts(h, n);
}

void require_brute_force(const std::string& placement) {
  nn::TransformerLM model(coursework::small_config(placement, 2));
  const std::size_t n = 4;
  const std::vector<std::vector<Array>> yours = your_parts(model, n), brute = brute_parts(model);
  REQUIRE(yours.size() == brute.size());
  bool longer = false;  // some path through two or more branches carries gradient: the shift was exercised
  for (std::size_t a = 0; a < yours.size(); ++a) {
    INFO(placement << ": array " << a << " (0: emb, then named_parameters)");
    REQUIRE(yours[a].size() == n + 1);
    for (std::size_t k = 0; k <= n; ++k) {
      INFO("k = " << k);
      REQUIRE_CLOSE(yours[a][k], brute[a][k], test::tol(1e-10, 1e-4), test::tol(1e-13, 1e-5));
      if (k >= 2 && xt::amax(xt::abs(brute[a][k]))() > 1e-8) longer = true;
    }
  }
  REQUIRE(longer);
}

}  // namespace

EXERCISE_CASE("ex15", "graded sweep: y = x + tanh(x) with the tanh edge marked, expanded by hand") {
  Tape tape;
  TapeScope scope(tape);
  const Array x0 = test::randn({2, 3}, 3);
  Var x = tape.leaf(x0, true);
  Var y = add(x, tanh(x));
  Var r = sum(y);
  const Array tanh_slope = 1.0 - xt::tanh(x0) * xt::tanh(x0);
  // d r / d x = 1 (the skip, no marked edge) + (1 - tanh(x)^2) (through the marked edge)
  const std::vector<std::vector<Array>> parts = coursework::graded_sweep(tape, r.index(), {{y.index(), 1}}, 1, {x.index(), y.index()});
  REQUIRE(parts.size() == 2);
  REQUIRE_CLOSE(parts[0][0], Array(xt::ones_like(x0)), 1e-14, 1e-15);
  REQUIRE_CLOSE(parts[0][1], tanh_slope, test::tol(1e-14, 1e-4), test::tol(1e-15, 1e-5));
  REQUIRE_CLOSE(parts[1][0], Array(xt::ones_like(x0)), 1e-14, 1e-15);  // y is above the marked edge
  REQUIRE_CLOSE(parts[1][1], Array(xt::zeros_like(x0)), 1e-14, 1e-15);
  // K = 0: the one coefficient holds every path, the ordinary gradient
  const std::vector<std::vector<Array>> whole = coursework::graded_sweep(tape, r.index(), {{y.index(), 1}}, 0, {x.index()});
  REQUIRE_CLOSE(whole[0][0], Array(1.0 + tanh_slope), 1e-14, 1e-15);
}

EXERCISE_CASE("ex15", "graded sweep: every g_k of a 2-block Post-LN model equals the inclusion-exclusion of cut backwards") {
  require_brute_force("post");
}

EXERCISE_CASE("ex15", "graded sweep: every g_k of a 2-block Pre-LN model equals the inclusion-exclusion of cut backwards") {
  require_brute_force("pre");
}

EXERCISE_CASE("ex15", "graded sweep: with K = 1 the last coefficient holds every path through one branch or more") {
  nn::TransformerLM model(coursework::small_config("post", 2));
  const std::vector<std::vector<Array>> yours = your_parts(model, 1), brute = brute_parts(model);
  for (std::size_t a = 0; a < yours.size(); ++a) {
    INFO("array " << a);
    Array rest = xt::zeros_like(brute[a][0]);
    for (std::size_t k = 1; k < brute[a].size(); ++k) rest += brute[a][k];
    REQUIRE_CLOSE(yours[a][0], brute[a][0], 1e-10, 1e-13);
    REQUIRE_CLOSE(yours[a][1], rest, test::tol(1e-10, 1e-4), test::tol(1e-13, 1e-5));
  }
}

}  // namespace check_ex15_graded_sweep
