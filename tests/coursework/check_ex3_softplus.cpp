// The check of exercise, for the student: scripts/exercise 3 (docs/coursework.md#ex3)
#include <cmath>

#include <xtensor/xmath.hpp>

#include "exercise.hpp"
#include "engine/engine.hpp"
#include "ex3_softplus.hpp"

namespace check_ex3_softplus {  // one namespace per test file: the files compile in groups

using namespace gs;
using gs::coursework::softplus;

EXERCISE_CASE("ex3", "softplus: one tape entry named softplus, whose input is x") {
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.leaf(test::randn({3, 4}, 1));
  const std::size_t before = tape.size();
  Var y = softplus(x);
  REQUIRE(tape.size() == before + 1);  // an op of its own, not a composition of exp and log
  REQUIRE(y.entry().op == std::string("softplus"));
  REQUIRE(y.entry().inputs == std::vector<int>{x.index()});
  REQUIRE(y.shape() == x.shape());
}

EXERCISE_CASE("ex3", "softplus: values equal log(1 + e^x), and stay finite at |x| = 800") {
  Tape tape;
  TapeScope scope(tape);
  const Array a = 3.0 * test::randn({4, 5}, 2);
  REQUIRE_CLOSE(softplus(tape.constant(a)).value(), xt::log(1.0 + xt::exp(a)), test::tol(1e-13, 1e-4), test::tol(1e-15, 1e-5));
  // e^800 overflows to inf, so log(1 + e^x) written as is gives inf at x = 800.
  const Array y = softplus(tape.constant(Array{800.0, -800.0, 0.0})).value();
  REQUIRE(y(0) == Approx(800.0));
  REQUIRE(y(1) >= 0.0);
  REQUIRE(y(1) < 1e-300);  // e^-800
  REQUIRE(y(2) == Approx(std::log(2.0)));
}

EXERCISE_CASE("ex3", "softplus: the backward agrees with central finite differences") {
  test::require_gradcheck([](const test::Vars& v) { return softplus(v[0]); }, {2.0 * test::randn({3, 4}, 3)});
  // Inside a chain, so that the backward must use the gradient it receives (dL/dy), not 1.
  test::require_gradcheck([](const test::Vars& v) { return tanh(softplus(v[0]) * v[0]); }, {test::randn({2, 3}, 4)});
}

EXERCISE_CASE("ex3", "softplus: the gradient at |x| = 800 is sigmoid(x): 1 and 0") {
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.leaf(Array{800.0, -800.0, 0.0});
  sum(softplus(x)).backward();
  const Array& g = x.grad();
  REQUIRE(g(0) == Approx(1.0));   // finite: e^x / (1 + e^x) written as is gives inf / inf = nan here
  REQUIRE(g(1) >= 0.0);
  REQUIRE(g(1) < 1e-300);
  REQUIRE(g(2) == Approx(0.5));
}

}  // namespace check_ex3_softplus
