// graded_backward on a graph small enough to expand by hand: two residual steps on a vector,
//   s1 = x + tanh(x),   s2 = s1 + tanh(s1),   loss = sum(c * s2)  (c a constant vector: dL/ds2 = c)
// with the edges from the two tanh's into their adds marked. Elementwise, with t1 = 1 - tanh(x)^2 and
// t2 = 1 - tanh(s1)^2, the chain rule dL/dx = c (1 + t2)(1 + t1) expands into
//   g_0 = c,   g_1 = c (t1 + t2),   g_2 = c t1 t2
// (paths through no branch, through one of the two, through both).
#include "check.hpp"
#include "engine/engine.hpp"
#include "engine/graded_backward.hpp"

namespace test_engine_graded {  // one namespace per test file: the files compile in groups

using namespace gs;

namespace {

struct TwoSteps {
  Tape tape;
  Var x, s1, s2, loss;
  std::vector<TapeEdge> marked;
  Array c = Array{0.5, -1.5, 2.0};
  TwoSteps() {
    TapeScope scope(tape);
    x = tape.leaf(Array{0.3, -0.8, 1.1});
    s1 = add(x, tanh(x));                      // input 1 is the branch
    s2 = add(s1, tanh(s1));
    loss = sum(mul(tape.constant(c), s2));
    marked = {{s1.index(), 1}, {s2.index(), 1}};
  }
};

}  // namespace

TEST_CASE("graded_backward: each coefficient is the sum over the paths through that many marked edges", "[graded]") {
  TwoSteps g;
  TapeScope scope(g.tape);
  const std::vector<std::vector<Array>> parts = graded_backward(g.loss, g.marked, 2, {g.x, g.s1});
  REQUIRE(parts.size() == 2);
  REQUIRE(parts[0].size() == 3);
  const Array t1 = 1.0 - xt::square(xt::tanh(g.x.value()));
  const Array t2 = 1.0 - xt::square(xt::tanh(g.s1.value()));
  REQUIRE(xt::allclose(parts[0][0], g.c, 0.0, 1e-15));
  REQUIRE(xt::allclose(parts[0][1], g.c * (t1 + t2), 0.0, test::tol(1e-15, 1e-5)));
  REQUIRE(xt::allclose(parts[0][2], g.c * t1 * t2, 0.0, test::tol(1e-15, 1e-5)));
  // s1 lies after the first branch: only the second can be on its paths.
  REQUIRE(xt::allclose(parts[1][0], g.c, 0.0, 1e-15));
  REQUIRE(xt::allclose(parts[1][1], g.c * t2, 0.0, test::tol(1e-15, 1e-5)));
  REQUIRE(xt::amax(xt::abs(parts[1][2]))() == 0.0);
  // The sweep leaves the tape alone: no gradient was written.
  REQUIRE_FALSE(g.tape.entry(g.x.index()).has_grad);
  // The coefficients sum to the ordinary gradient.
  g.loss.backward();
  REQUIRE(xt::allclose(parts[0][0] + parts[0][1] + parts[0][2], g.x.grad(), 0.0, 1e-15));
}

TEST_CASE("graded_backward: K below the number of marked edges on a path lumps the rest into g_K", "[graded]") {
  TwoSteps g;
  TapeScope scope(g.tape);
  const std::vector<Array> two = graded_backward(g.loss, g.marked, 2, {g.x})[0];
  const std::vector<Array> one = graded_backward(g.loss, g.marked, 1, {g.x})[0];
  const std::vector<Array> zero = graded_backward(g.loss, g.marked, 0, {g.x})[0];
  REQUIRE(one.size() == 2);
  REQUIRE(xt::allclose(one[0], two[0], 0.0, 1e-15));
  REQUIRE(xt::allclose(one[1], two[1] + two[2], 0.0, test::tol(1e-15, 1e-5)));
  REQUIRE(xt::allclose(zero[0], two[0] + two[1] + two[2], 0.0, 1e-15));
  // With no marked edge everything is g_0.
  const std::vector<Array> none = graded_backward(g.loss, {}, 2, {g.x})[0];
  REQUIRE(xt::allclose(none[0], zero[0], 0.0, 1e-15));
  REQUIRE(xt::amax(xt::abs(none[1]))() == 0.0);
}

TEST_CASE("graded_backward: a broadcast input and a Var on no path", "[graded]") {
  Tape tape;
  TapeScope scope(tape);
  Var w = tape.leaf(Array{2.0});          // (1,), broadcast against (3,)
  Var x = tape.leaf(Array{1.0, 2.0, 3.0});
  Var off = tape.leaf(Array{4.0, 5.0});   // not used by the loss
  Var y = add(x, mul(x, w));              // the branch x * w, marked
  Var loss = sum(y);
  const auto parts = graded_backward(loss, {{y.index(), 1}}, 1, {w, x, off});
  REQUIRE(parts[0][0]() == 0.0);          // w is reached through the branch only
  REQUIRE(parts[0][1]() == 6.0);          // sum of x, summed back to (1,)
  REQUIRE(xt::allclose(parts[1][0], Array{1.0, 1.0, 1.0}));
  REQUIRE(xt::allclose(parts[1][1], Array{2.0, 2.0, 2.0}));
  REQUIRE(parts[2][0].shape() == off.value().shape());
  REQUIRE(xt::amax(xt::abs(parts[2][0]) + xt::abs(parts[2][1]))() == 0.0);
}

TEST_CASE("graded_backward: an edge not on the tape and a hook are refused, naming the call", "[graded]") {
  TwoSteps g;
  TapeScope scope(g.tape);
  REQUIRE_THROWS_WITH(graded_backward(g.loss, {{g.s1.index(), 2}}, 2, {g.x}),
                      Catch::Contains("graded_backward at test_engine_graded.cpp") &&
                          Catch::Contains("marked edge (entry " + std::to_string(g.s1.index()) + ", input 2)"));
  g.s1.register_hook([](Array& grad) { grad *= 2.0; });
  REQUIRE_THROWS_WITH(graded_backward(g.loss, g.marked, 2, {g.x}), Catch::Contains("gradient hooks"));
}

}  // namespace test_engine_graded
