// The gradient checker itself: a checker that cannot fail proves nothing. Custom ops with deliberately
// wrong backward functions (made through Tape::record, as a student would write a new op) must fail,
// and the report must say where; correct ones must pass; non-scalar outputs count every element.
#include <algorithm>
#include <cmath>
#include <string>

#include "check.hpp"
#include "engine/engine.hpp"
#include "engine/tools/gradcheck.hpp"

namespace test_gradcheck {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::Vars;

namespace {

// y = x, with a backward that claims dy/dx = 2: the classic wrong derivative.
Var doubled_identity(const Var& x) {
  return x.tape().record("doubled_identity", {x}, x.value(),
                         [](const BackwardArgs& g) -> Grads { return {2.0 * g.grad}; }, Site::current());
}

// y = x, with a correct backward.
Var identity(const Var& x) {
  return x.tape().record("identity", {x}, x.value(), [](const BackwardArgs& g) -> Grads { return {g.grad}; },
                         Site::current());
}

// y = x, whose backward sends the gradient to the wrong elements (reversed). Every gradient of sum(y)
// is 1, so only a weighted sum of a non-scalar output can see this.
Var reversed_backward(const Var& x) {
  return x.tape().record("reversed_backward", {x}, x.value(), [](const BackwardArgs& g) -> Grads {
    Array dx = g.grad;
    std::reverse(dx.begin(), dx.end());
    return {dx};
  }, Site::current());
}

// z = a * b (same shapes), correct except that b's gradient is off by `error` at flat element `at`.
Var mul_with_error(const Var& a, const Var& b, std::size_t at, double error) {
  return a.tape().record("mul_with_error", {a, b}, a.value() * b.value(), [at, error](const BackwardArgs& g) -> Grads {
    Array db = g.grad * g.in(0);
    db.data()[at] += error;
    return {Array(g.grad * g.in(1)), db};
  }, Site::current());
}

// y = x^3 with its correct derivative 3x^2.
Var cube(const Var& x) {
  return x.tape().record("cube", {x}, x.value() * x.value() * x.value(), [](const BackwardArgs& g) -> Grads {
    return {Array(3.0 * g.grad * g.in(0) * g.in(0))};
  }, Site::current());
}

}  // namespace

TEST_CASE("a wrong backward (2 * grad for y = x) fails the check", "[gradcheck]") {
  const Array x = test::randn({3, 4}, 1);
  const GradcheckResult r = gradcheck([](const Vars& v) { return sum(doubled_identity(v[0])); }, {x});
  INFO(r.report);
  REQUIRE_FALSE(r.ok);
  REQUIRE(r.analytic == Approx(2.0));
  REQUIRE(r.numeric == Approx(1.0).epsilon(1e-6));
  REQUIRE(r.max_abs_error == Approx(1.0).epsilon(1e-6));
  REQUIRE(r.max_rel_error == Approx(0.5).epsilon(1e-6));
  REQUIRE(r.worst_input == 0);
  REQUIRE(r.worst_index < x.size());
  REQUIRE_THAT(r.report, Catch::StartsWith("gradcheck FAILED") && Catch::Contains("analytic 2") &&
                             Catch::Contains("numeric 1"));
  // The same op inside a larger graph, with a non-scalar output, fails too.
  const GradcheckResult deep = gradcheck([](const Vars& v) { return tanh(doubled_identity(v[0] * 0.5)) + v[0]; }, {x});
  INFO(deep.report);
  REQUIRE_FALSE(deep.ok);
}

TEST_CASE("a correct custom backward passes the check", "[gradcheck]") {
  const Array x = test::randn({3, 4}, 2);
  const GradcheckResult r = gradcheck([](const Vars& v) { return sum(identity(v[0])); }, {x});
  INFO(r.report);
  REQUIRE(r.ok);
  REQUIRE(r.max_abs_error < 1e-8);
  REQUIRE_THAT(r.report, Catch::StartsWith("gradcheck passed"));

  const GradcheckResult c = gradcheck([](const Vars& v) { return cube(v[0]); }, {x});
  INFO(c.report);
  REQUIRE(c.ok);
  REQUIRE(c.max_abs_error < test::tol(1e-7, 1e-3));
  // The reported derivatives at the worst element are the real ones: numeric ~ analytic.
  REQUIRE(c.numeric == Approx(c.analytic).epsilon(test::tol(1e-6, 1e-3)).margin(test::tol(1e-8, 1e-4)));
}

TEST_CASE("the report names the worst input and element", "[gradcheck]") {
  const Array a = test::randn({2, 4}, 3), b = test::randn({2, 4}, 4);
  const double error = test::tol(1e-3, 1e-1);  // well above the build's tolerance and finite-difference noise
  for (std::size_t at : {std::size_t{0}, std::size_t{5}, std::size_t{7}}) {
    const GradcheckResult r = gradcheck([at, error](const Vars& v) { return mul_with_error(v[0], v[1], at, error); }, {a, b});
    INFO(r.report);
    REQUIRE_FALSE(r.ok);
    REQUIRE(r.worst_input == 1);
    REQUIRE(r.worst_index == at);
    REQUIRE(r.max_abs_error == Approx(error).epsilon(test::tol(1e-3, 1e-2)));
    REQUIRE(r.analytic - r.numeric == Approx(error).epsilon(test::tol(1e-3, 1e-2)));
    REQUIRE_THAT(r.report, Catch::Contains("worst at input 1 element " + std::to_string(at)));
  }
}

TEST_CASE("the tolerances decide: an error just under passes, just over fails", "[gradcheck]") {
  const Array a = test::randn({2, 3}, 5), b = test::randn({2, 3}, 6);
  auto f = [](double error) {
    return [error](const Vars& v) { return sum(mul_with_error(v[0], v[1], 4, error)); };
  };
  // Default tolerance: |analytic - numeric| <= 1e-6 + 1e-5 |numeric| (float32: 1e-2 + 1e-2 |numeric|).
  // The errors sit a factor 100 under and over it, and above the finite differences' own noise.
  const double under = test::tol(1e-8, 1e-3), over = test::tol(1e-4, 1e-1);
  const GradcheckResult small = gradcheck(f(under), {a, b});
  INFO(small.report);
  REQUIRE(small.ok);
  REQUIRE(small.worst_input == 1);
  REQUIRE(small.worst_index == 4);
  const GradcheckResult large = gradcheck(f(over), {a, b});
  INFO(large.report);
  REQUIRE_FALSE(large.ok);
  // Loosened or tightened by the options.
  GradcheckOptions loose;
  loose.abs_tolerance = 10 * over;
  REQUIRE(gradcheck(f(over), {a, b}, loose).ok);
  GradcheckOptions tight;
  tight.abs_tolerance = under / 100;
  tight.rel_tolerance = 0.0;
  REQUIRE_FALSE(gradcheck(f(under), {a, b}, tight).ok);
}

TEST_CASE("a non-scalar output is checked through a weighted sum, so every element counts", "[gradcheck]") {
  const Array x = test::randn({3, 4}, 7);
  // Through sum(y) the reversed gradient looks right (all ones either way)...
  const GradcheckResult through_sum = gradcheck([](const Vars& v) { return sum(reversed_backward(v[0])); }, {x});
  INFO(through_sum.report);
  REQUIRE(through_sum.ok);
  // ...but the checker weights a non-scalar output with random w, L = sum(y * w), and sees it.
  const GradcheckResult weighted = gradcheck([](const Vars& v) { return reversed_backward(v[0]); }, {x});
  INFO(weighted.report);
  REQUIRE_FALSE(weighted.ok);
  REQUIRE(weighted.max_abs_error > 0.01);
  // The same weighting of a correct non-scalar op passes, for any seed of the weights.
  for (unsigned seed : {0u, 1u, 2u}) {
    GradcheckOptions options;
    options.seed = seed;
    const GradcheckResult ok = gradcheck([](const Vars& v) { return identity(v[0]) * v[0]; }, {x}, options);
    INFO(ok.report);
    REQUIRE(ok.ok);
  }
  // The weights are fixed by the seed: two runs give the same result.
  const GradcheckResult again = gradcheck([](const Vars& v) { return reversed_backward(v[0]); }, {x});
  REQUIRE(again.max_abs_error == weighted.max_abs_error);
  REQUIRE(again.worst_index == weighted.worst_index);
}

TEST_CASE("an output of shape (1, 1) is treated as a scalar, not weighted", "[gradcheck]") {
  const Array x = test::randn({2, 3}, 8);
  const GradcheckResult r = gradcheck([](const Vars& v) { return sum(doubled_identity(v[0]), {0, 1}, true); }, {x});
  INFO(r.report);
  REQUIRE_FALSE(r.ok);
  REQUIRE(r.numeric == Approx(1.0).epsilon(1e-6));  // unweighted: d sum(x) / dx_i = 1
  REQUIRE(r.analytic == Approx(2.0));
}

TEST_CASE("inputs the output does not depend on get a zero gradient and pass", "[gradcheck]") {
  const GradcheckResult r = gradcheck([](const Vars& v) { return tanh(v[0]); },
                                      {test::randn({3}, 9), test::randn({2, 2}, 10)});
  INFO(r.report);
  REQUIRE(r.ok);
}

TEST_CASE("f runs on a fresh tape 2 + 2n times for n input elements", "[gradcheck]") {
  int calls = 0;
  const std::size_t outside = Tape::current().size();
  const GradcheckResult r = gradcheck([&](const Vars& v) {
    ++calls;
    REQUIRE(v[0].tape().size() == 2);  // only the two leaves: nothing left over from an earlier run
    REQUIRE(&Tape::current() == &v[0].tape());  // ops inside f go onto the checker's tape
    return sum(v[0] * v[1]);
  }, {test::randn({3}, 11), test::randn({2, 3}, 12)});
  REQUIRE(r.ok);
  REQUIRE(calls == 2 + (float32_build ? 4 : 2) * (3 + 6));
  REQUIRE(Tape::current().size() == outside);  // the caller's tape is untouched
}

TEST_CASE("REQUIRE_CLOSE's report names the worst element, both values, the differences and the tolerance as written",
          "[gradcheck][checks]") {
  const Array yours{{1.0, 2.0}, {3.0, 4.0}}, expected{{1.0, 2.0}, {-3.0, 4.0}};  // a sign error at (1, 0)
  const std::string report = test::difference(yours, expected, 1e-10, 1e-12);
  CHECK_THAT(report, Catch::Contains("worst at (1, 0): yours 3, expected -3"));
  CHECK_THAT(report, Catch::Contains("largest |difference| 6, largest relative difference 2"));
  CHECK_THAT(report, Catch::Contains("tolerance 1e-12 + 1e-10 |expected|"));
  CHECK(test::difference(yours, yours, 1e-10, 1e-12).empty());
  CHECK(test::difference(yours + 1e-13, yours, 0.0, 1e-12).empty());  // within atol
  CHECK_THAT(test::difference(yours, Array{1.0, 2.0}, 1e-10, 1e-12), Catch::Contains("yours has shape (2, 2), expected (2,)"));
  const Array with_nan{{1.0, 2.0}, {3.0, NAN}};
  CHECK_THAT(test::difference(with_nan, yours, 1e-10, 1e-12), Catch::Contains("worst at (1, 1): yours nan, expected 4"));
  CHECK_THAT(test::not_small(0.2263836699, 1e-12), Catch::Contains("is 0.2263836699, more than the tolerance 1e-12 from 0"));
  CHECK(test::not_small(-1e-13, 1e-12).empty());
}

}  // namespace test_gradcheck
