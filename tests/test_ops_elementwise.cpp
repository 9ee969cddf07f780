// Elementwise ops: every binary op under every kind of broadcasting, every unary op on a domain away
// from its kinks and poles, the scalar operators, shared inputs, and forward values.
#include <cmath>
#include <functional>
#include <numbers>
#include <string>

#include "check.hpp"
#include "engine/engine.hpp"

namespace test_ops_elementwise {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::require_gradcheck;
using test::Vars;

namespace {

using BinaryOp = std::function<Var(const Var&, const Var&)>;

struct Binary {
  const char* name;
  BinaryOp op;
  bool positive_b;  // the second operand must stay away from 0 (a divisor)
};

const std::vector<Binary>& binary_ops() {
  static const std::vector<Binary> ops = {
      {"add", [](const Var& a, const Var& b) { return add(a, b); }, false},
      {"sub", [](const Var& a, const Var& b) { return sub(a, b); }, false},
      {"mul", [](const Var& a, const Var& b) { return mul(a, b); }, false},
      {"div", [](const Var& a, const Var& b) { return div(a, b); }, true},
  };
  return ops;
}

// Every way two operands can broadcast: equal, a row vector, a column, a 1-D trailing vector, a
// 0-d scalar, both sides broadcasting at once, and a rank difference of more than one.
const std::vector<std::pair<Shape, Shape>>& broadcast_cases() {
  static const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {3, 4}}, {{3, 4}, {4}},    {{4}, {3, 4}},    {{3, 4}, {3, 1}}, {{3, 1}, {3, 4}},
      {{3, 4}, {1, 4}}, {{1, 4}, {3, 4}}, {{3, 4}, {}},     {{}, {3, 4}},     {{3, 1}, {1, 4}},
      {{}, {}},         {{2, 1, 4}, {3, 1}}, {{3}, {2, 4, 1}},
  };
  return cases;
}

// out[i, j] for a (3, 4) result whose operands broadcast: reads operand x at (i, j) by NumPy's rule.
double at_broadcast(const Array& x, std::size_t i, std::size_t j) {
  const std::size_t r = x.dimension();
  if (r == 0) return x();
  if (r == 1) return x(x.shape(0) == 1 ? 0 : j);
  return x(x.shape(0) == 1 ? 0 : i, x.shape(1) == 1 ? 0 : j);
}

}  // namespace

// ---- binary ops: gradients under broadcasting ----

TEST_CASE("add, sub, mul and div pass gradcheck under every kind of broadcasting", "[elementwise][binary][gradcheck]") {
  unsigned seed = 100;
  for (const Binary& b : binary_ops()) {
    for (const auto& [sa, sb] : broadcast_cases()) {
      INFO(b.name << " " << shape_str(sa) << " with " << shape_str(sb));
      const Array x = test::randn(sa, ++seed);
      const Array y = b.positive_b ? test::randn_positive(sb, ++seed) : test::randn(sb, ++seed);
      require_gradcheck([&](const Vars& v) { return b.op(v[0], v[1]); }, {x, y});
    }
  }
}

TEST_CASE("binary ops produce the broadcast shape and NumPy's values", "[elementwise][binary]") {
  Tape tape;
  const Array a = test::randn({3, 4}, 1);
  const std::vector<Shape> other_shapes = {{3, 4}, {4}, {3, 1}, {1, 4}, {}};
  for (const Shape& sb : other_shapes) {
    INFO("(3, 4) with " << shape_str(sb));
    const Array b = test::randn_positive(sb, 2);
    Var va = tape.leaf(a), vb = tape.leaf(b);
    const Var outs[4] = {add(va, vb), sub(va, vb), mul(va, vb), div(va, vb)};
    for (const Var& out : outs) REQUIRE(out.shape() == Shape{3, 4});
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 4; ++j) {
        const Real x = a(i, j), y = at_broadcast(b, i, j);  // Real: the op rounds to the build's type
        REQUIRE(outs[0].value()(i, j) == x + y);
        REQUIRE(outs[1].value()(i, j) == x - y);
        REQUIRE(outs[2].value()(i, j) == x * y);
        REQUIRE(outs[3].value()(i, j) == Approx(x / y).epsilon(1e-15));
      }
    }
  }
}

TEST_CASE("a broadcast operand's gradient is summed over the axes it was repeated along", "[elementwise][binary]") {
  Tape tape;
  const Array a = test::randn({3, 4}, 3);
  Var x = tape.leaf(a);
  Var row = tape.leaf(test::randn({4}, 4));    // repeated over 3 rows
  Var col = tape.leaf(test::randn({3, 1}, 5));  // repeated over 4 columns
  Var s = tape.leaf(Array(1.5));                // 0-d: repeated over all 12 elements
  Var loss = sum(x * s + row + col);
  loss.backward();
  REQUIRE(row.grad().dimension() == 1);
  REQUIRE(xt::allclose(row.grad(), Array{3.0, 3.0, 3.0, 3.0}));
  REQUIRE(col.grad().shape() == col.value().shape());
  REQUIRE(xt::allclose(col.grad(), xt::ones<Real>({3, 1}) * 4.0));
  REQUIRE(s.grad().dimension() == 0);
  REQUIRE(s.grad()() == Approx(xt::sum(a)()).epsilon(test::tol(1e-14, 1e-5)));  // d/ds sum(x s) = sum(x)
  REQUIRE(xt::allclose(x.grad(), xt::ones<Real>({3, 4}) * 1.5));
}

TEST_CASE("div's gradients are 1/b and -a/b^2, summed where b broadcast", "[elementwise][binary]") {
  Tape tape;
  const Array av = test::randn({3, 4}, 6);
  const Array bv = test::randn_positive({4}, 7);
  Var a = tape.leaf(av), b = tape.leaf(bv);
  sum(div(a, b)).backward();
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) REQUIRE(a.grad()(i, j) == Approx(1.0 / bv(j)).epsilon(test::tol(1e-14, 1e-5)));
  for (std::size_t j = 0; j < 4; ++j) {
    double expected = 0.0;
    for (std::size_t i = 0; i < 3; ++i) expected -= av(i, j) / (bv(j) * bv(j));
    REQUIRE(b.grad()(j) == Approx(expected).epsilon(test::tol(1e-12, 1e-5)));
  }
}

// ---- unary ops ----

TEST_CASE("every unary op passes gradcheck on a safe domain", "[elementwise][unary][gradcheck]") {
  const Shape s{3, 4};
  SECTION("neg") { require_gradcheck([](const Vars& v) { return neg(v[0]); }, {test::randn(s, 10)}); }
  SECTION("exp") { require_gradcheck([](const Vars& v) { return exp(v[0]); }, {test::randn(s, 11)}); }
  SECTION("log on positive values") {
    require_gradcheck([](const Vars& v) { return log(v[0]); }, {test::randn_positive(s, 12)});
  }
  SECTION("sqrt on positive values") {
    require_gradcheck([](const Vars& v) { return sqrt(v[0]); }, {test::randn_positive(s, 13)});
  }
  SECTION("tanh") { require_gradcheck([](const Vars& v) { return tanh(v[0]); }, {test::randn(s, 14)}); }
  SECTION("sigmoid") { require_gradcheck([](const Vars& v) { return sigmoid(v[0]); }, {test::randn(s, 15)}); }
  SECTION("relu away from its kink") {
    require_gradcheck([](const Vars& v) { return relu(v[0]); }, {test::randn_away_from_zero(s, 16)});
  }
  SECTION("gelu") {
    require_gradcheck([](const Vars& v) { return gelu(v[0]); }, {test::randn(s, 17) * 2.0});
  }
  SECTION("pow with integer exponents on any sign") {
    for (double p : {1.0, 2.0, 3.0}) {
      INFO("p = " << p);
      require_gradcheck([p](const Vars& v) { return pow(v[0], p); }, {test::randn(s, 18)});
    }
  }
  SECTION("pow with non-integer and negative exponents on positive values") {
    for (double p : {0.5, 1.5, -0.7, -2.0, 2.5}) {
      INFO("p = " << p);
      require_gradcheck([p](const Vars& v) { return pow(v[0], p); }, {test::randn_positive(s, 19)});
    }
  }
  SECTION("0-d and 1-D inputs") {
    require_gradcheck([](const Vars& v) { return tanh(exp(v[0])); }, {Array(0.3)});
    require_gradcheck([](const Vars& v) { return gelu(sigmoid(v[0])); }, {test::randn({5}, 20)});
  }
}

TEST_CASE("unary ops compute their functions", "[elementwise][unary]") {
  Tape tape;
  Var x = tape.leaf(Array{-2.0, -0.5, 0.0, 0.5, 3.0});
  const Array& v = x.value();
  for (std::size_t i = 0; i < v.size(); ++i) {
    INFO("x = " << v(i));
    REQUIRE(neg(x).value()(i) == -v(i));
    REQUIRE(exp(x).value()(i) == Approx(std::exp(v(i))).epsilon(1e-15));
    REQUIRE(tanh(x).value()(i) == Approx(std::tanh(v(i))).epsilon(1e-15));
    REQUIRE(sigmoid(x).value()(i) == Approx(1.0 / (1.0 + std::exp(-v(i)))).epsilon(test::tol(1e-15, 1e-5)));
    REQUIRE(relu(x).value()(i) == (v(i) > 0 ? v(i) : 0.0));
    REQUIRE(pow(x, 2.0).value()(i) == Approx(v(i) * v(i)).epsilon(1e-15));
  }
  Var p = tape.leaf(Array{0.25, 1.0, 4.0});
  REQUIRE(xt::allclose(sqrt(p).value(), Array{0.5, 1.0, 2.0}, 0.0, 1e-15));
  REQUIRE(xt::allclose(pow(p, 0.5).value(), Array{0.5, 1.0, 2.0}, 0.0, 1e-15));
  REQUIRE(xt::allclose(pow(p, -1.0).value(), Array{4.0, 1.0, 0.25}, 0.0, 1e-15));
  Var e = tape.leaf(Array{1.0, std::numbers::e, std::exp(2.5)});
  REQUIRE(xt::allclose(log(e).value(), Array{0.0, 1.0, 2.5}, 0.0, test::tol(1e-15, 1e-5)));
}

TEST_CASE("gelu is x Phi(x) with the exact erf form", "[elementwise][unary][gelu]") {
  Tape tape;
  Var x = tape.leaf(Array{1.0, 0.0, -10.0, 10.0, -1.0});
  const Array& y = gelu(x).value();
  const double gelu1 = 0.5 * (1.0 + std::erf(1.0 / std::numbers::sqrt2));  // 1 * Phi(1)
  REQUIRE(y(0) == Approx(gelu1).epsilon(test::tol(1e-15, 1e-5)));
  REQUIRE(y(0) == Approx(0.8413447460685429).epsilon(test::tol(1e-15, 1e-5)));  // Phi(1) from tables
  REQUIRE(y(1) == 0.0);
  REQUIRE(std::abs(y(2)) < 1e-20);                  // -10 Phi(-10) ~ -7.6e-23
  REQUIRE(y(3) == Approx(10.0).epsilon(1e-15));      // 10 Phi(10) ~ 10
  REQUIRE(y(4) == Approx(-1.0 + gelu1).epsilon(test::tol(1e-14, 1e-5)));  // gelu(-x) = gelu(x) - x
  // The derivative at 0 is Phi(0) = 1/2, at 1 it is Phi(1) + phi(1).
  sum(gelu(x)).backward();
  REQUIRE(x.grad()(1) == Approx(0.5).epsilon(1e-15));
  const double phi1 = std::exp(-0.5) / std::sqrt(2.0 * std::numbers::pi);
  REQUIRE(x.grad()(0) == Approx(gelu1 + phi1).epsilon(test::tol(1e-14, 1e-5)));
}

TEST_CASE("sigmoid saturates to exactly 0 and 1 without NaN", "[elementwise][unary]") {
  Tape tape;
  Var x = tape.leaf(Array{-800.0, 800.0});
  Var y = sigmoid(x);
  REQUIRE(y.value()(0) == 0.0);
  REQUIRE(y.value()(1) == 1.0);
  sum(y).backward();
  REQUIRE(x.grad()(0) == 0.0);
  REQUIRE(x.grad()(1) == 0.0);
}

TEST_CASE("relu's gradient is the step function, with 0 at the kink", "[elementwise][unary]") {
  Tape tape;
  Var x = tape.leaf(Array{-1.0, 0.0, 2.0});
  sum(relu(x)).backward();
  REQUIRE(xt::allclose(x.grad(), Array{0.0, 0.0, 1.0}));
}

// ---- the scalar operators ----

TEST_CASE("the scalar operators pass gradcheck on both sides", "[elementwise][scalar][gradcheck]") {
  const Array x = test::randn({3, 4}, 30);
  const Array pos = test::randn_positive({3, 4}, 31);
  require_gradcheck([](const Vars& v) { return v[0] + 2.0; }, {x});
  require_gradcheck([](const Vars& v) { return v[0] - 2.0; }, {x});
  require_gradcheck([](const Vars& v) { return v[0] * 2.0; }, {x});
  require_gradcheck([](const Vars& v) { return v[0] / 2.0; }, {x});
  require_gradcheck([](const Vars& v) { return 2.0 + v[0]; }, {x});
  require_gradcheck([](const Vars& v) { return 2.0 - v[0]; }, {x});
  require_gradcheck([](const Vars& v) { return 2.0 * v[0]; }, {x});
  require_gradcheck([](const Vars& v) { return 2.0 / v[0]; }, {pos});
  require_gradcheck([](const Vars& v) { return -v[0]; }, {x});
  require_gradcheck([](const Vars& v) { return (3.0 - v[0] * 0.5) / 4.0 + 1.0 / (v[0] * v[0] + 1.0); }, {x});
}

TEST_CASE("the scalar operators compute the right values and derivatives", "[elementwise][scalar]") {
  Tape tape;
  const Array xv = {0.5, -2.0, 4.0};
  Var x = tape.leaf(xv);
  REQUIRE(xt::allclose((x + 2.0).value(), xv + 2.0));
  REQUIRE(xt::allclose((x - 2.0).value(), xv - 2.0));
  REQUIRE(xt::allclose((x * 2.0).value(), xv * 2.0));
  REQUIRE(xt::allclose((x / 2.0).value(), xv / 2.0));
  REQUIRE(xt::allclose((2.0 + x).value(), 2.0 + xv));
  REQUIRE(xt::allclose((2.0 - x).value(), 2.0 - xv));
  REQUIRE(xt::allclose((2.0 * x).value(), 2.0 * xv));
  REQUIRE(xt::allclose((2.0 / x).value(), 2.0 / xv));
  REQUIRE(xt::allclose((-x).value(), -xv));
  // The scalar is a constant: its entry needs no gradient, and the output keeps x's shape.
  Var y = 2.0 - x;
  REQUIRE(y.shape() == Shape{3});
  REQUIRE_FALSE(tape.entry(tape.entry(y.index()).inputs[0]).requires_grad);
  sum(y).backward();
  REQUIRE(xt::allclose(x.grad(), Array{-1.0, -1.0, -1.0}));
  sum(2.0 / x).backward();
  REQUIRE(xt::allclose(x.grad(), -2.0 / (xv * xv)));
}

// ---- shared inputs: one value on several paths ----

TEST_CASE("a value used several times gets the sum of its gradients", "[elementwise][shared][gradcheck]") {
  const Array x = test::randn({3, 4}, 40);
  SECTION("x * x") {
    require_gradcheck([](const Vars& v) { return v[0] * v[0]; }, {x});
    Tape tape;
    Var a = tape.leaf(x);
    sum(a * a).backward();
    REQUIRE(xt::allclose(a.grad(), 2.0 * x, 0.0, 1e-15));
  }
  SECTION("f(x) = x tanh(x) + x") {
    require_gradcheck([](const Vars& v) { return v[0] * tanh(v[0]) + v[0]; }, {x});
    Tape tape;
    Var a = tape.leaf(x);
    sum(a * tanh(a) + a).backward();
    const Array t = xt::tanh(x);
    REQUIRE(xt::allclose(a.grad(), t + x * (1.0 - t * t) + 1.0, 0.0, test::tol(1e-14, 1e-5)));
  }
  SECTION("x / x and x - x have zero gradient") {
    Tape tape;
    Var a = tape.leaf(test::randn_positive({3, 4}, 41));
    sum(a / a + (a - a)).backward();
    REQUIRE(xt::allclose(a.grad(), xt::zeros<Real>({3, 4}), 0.0, 1e-15));
    require_gradcheck([](const Vars& v) { return v[0] / v[0] + (v[0] - v[0]) * v[0]; }, {x});
  }
  SECTION("an intermediate on two paths: y = e^x, y * y + log(y)") {
    require_gradcheck([](const Vars& v) {
      Var y = exp(v[0]);
      return y * y + log(y);
    }, {x});
  }
  SECTION("shared operands that broadcast against each other") {
    // x (3, 4) meets its own column means (3, 1) and row (4,) of a second input twice.
    require_gradcheck([](const Vars& v) {
      Var m = mean(v[0], {1}, true);
      Var centred = v[0] - m;
      return centred * v[1] + sigmoid(v[1]) * m / (m * m + 1.0);
    }, {x, test::randn({4}, 42)});
  }
  SECTION("the same leaf on both sides of every binary op") {
    const Array p = test::randn_positive({2, 3}, 43);
    for (const Binary& b : binary_ops()) {
      INFO(b.name);
      require_gradcheck([&](const Vars& v) { return b.op(b.op(v[0], v[0]), v[0]); }, {p});
    }
  }
}

TEST_CASE("a reference to a value or gradient stays valid while later ops are recorded", "[elementwise][tape]") {
  // Regression: the tape once kept its entries in a std::vector, so the next op's push_back could
  // reallocate it and leave `v` below dangling (a crash in exactly this kind of test).
  Tape tape;
  Var x = tape.leaf(Array{1.0, -2.0});
  const Array& v = x.value();
  const Array* address = &v;
  Var y = x;
  for (int i = 0; i < 1000; ++i) y = tanh(y);
  REQUIRE(&x.value() == address);
  REQUIRE(v == Array{1.0, -2.0});
  sum(y).backward();
  const Array& g = x.grad();
  for (int i = 0; i < 1000; ++i) y = y * 1.0;
  REQUIRE(&x.grad() == &g);
  REQUIRE(xt::all(xt::isfinite(g)));
}

}  // namespace test_ops_elementwise
