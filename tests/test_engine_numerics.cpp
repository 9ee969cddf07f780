// Numerics at the edges: pow gives one answer in every SIMD lane and at 0; a NaN goes through every
// op of engine/ops, in values and in gradients; gelu is finite for every finite input; anomaly mode
// also checks leaves, constants, parameters and seeds.
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "check.hpp"
#include "engine/engine.hpp"

namespace test_engine_numerics {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::Vars;

namespace {

constexpr Real nan_ = std::numeric_limits<Real>::quiet_NaN();
constexpr Real inf_ = std::numeric_limits<Real>::infinity();

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }
bool has_nan(const Array& a) {
  for (double v : a)
    if (std::isnan(v)) return true;
  return false;
}
bool all_finite(const Array& a) {
  for (double v : a)
    if (!std::isfinite(v)) return false;
  return true;
}

// The value of f on leaves made from `inputs` and each leaf's gradient after a backward pass from
// f's output with the given seed (ones if empty). A leaf no gradient reached gets zeros.
struct Run {
  Array y;
  std::vector<Array> grads;
};
Run run(const std::function<Var(const Vars&)>& f, const std::vector<Array>& inputs, const Array* seed = nullptr) {
  Tape tape;
  TapeScope scope(tape);
  Vars leaves;
  for (const Array& a : inputs) leaves.push_back(tape.leaf(a));
  Var y = f(leaves);
  y.backward(seed ? *seed : Array(xt::ones_like(y.value())));
  Run r{y.value(), {}};
  for (const Var& l : leaves) r.grads.push_back(l.entry().has_grad ? l.grad() : Array(xt::zeros_like(l.value())));
  return r;
}

}  // namespace

// ---- pow ----

TEST_CASE("pow gives the same value and gradient in every SIMD lane and in the scalar tail", "[numerics][pow]") {
  // Regression: xt::pow evaluated pairs of elements with xsimd and the odd last one with std::pow,
  // which disagree at 0: 0^0 was 0 in a pair and 1 alone, 0^-1 was 0 and inf.
  // Nine equal elements fill lanes of every width (2, 4, 8) and leave a tail.
  // (In a float32 build 1e-300 and 1e300 are stored as 0 and inf.)
  for (double v : {0.0, -0.0, 1.0, 2.5, -2.0, 1e-300, 1e300, double(inf_), double(-inf_), double(nan_)}) {
    for (double p : {0.0, 1.0, 2.0, 3.0, 0.5, -1.0, -2.0, 2.5}) {
      INFO("x = " << v << ", p = " << p);
      const Run r = run([p](const Vars& x) { return pow(x[0], p); }, {Array(xt::full_like(Array::from_shape({9}), v))});
      for (std::size_t i = 0; i < 9; ++i) {
        INFO("element " << i << ": value " << r.y(i) << ", gradient " << r.grads[0](i));
        REQUIRE(same_bits(r.y(i), static_cast<Real>(std::pow(static_cast<Real>(v), p))));  // C's pow (IEEE 754)
        REQUIRE(same_bits(r.grads[0](i), r.grads[0](0)));
      }
    }
  }
}

TEST_CASE("pow at 0: 0^0 = 1 with gradient 0 (d/dx x^0 = 0, PyTorch's rule), and p x^(p-1) otherwise", "[numerics][pow]") {
  struct Case {
    double p, value, grad;
  };
  // d/dx x^p at 0: p = 0 the constant 1, so 0; p = 1 the identity, 1; p = 2, 3 zero; a fractional or
  // negative p has a pole: +inf for p = 1/2 (from the right), -inf for p = -1 (0^-2 = +inf, times -1).
  for (const Case c : {Case{0.0, 1.0, 0.0}, Case{1.0, 0.0, 1.0}, Case{2.0, 0.0, 0.0}, Case{3.0, 0.0, 0.0},
                       Case{0.5, 0.0, inf_}, Case{-1.0, inf_, -inf_}}) {
    INFO("p = " << c.p);
    const Run r = run([&](const Vars& x) { return pow(x[0], c.p); }, {Array{0.0}});
    REQUIRE(r.y(0) == c.value);
    REQUIRE(r.grads[0](0) == c.grad);
  }
  // x^0 = 1 for every x, NaN included (IEEE 754 pow), and its gradient is 0 times the incoming one.
  const Run n = run([](const Vars& x) { return pow(x[0], 0.0); }, {Array{nan_, -3.0, inf_}});
  REQUIRE(n.y == Array{1.0, 1.0, 1.0});
  REQUIRE(n.grads[0] == Array{0.0, 0.0, 0.0});
  // Elsewhere pow still passes its gradient check.
  test::require_gradcheck([](const Vars& x) { return pow(x[0], 2.5); }, {test::randn_positive({3, 4}, 1)});
  test::require_gradcheck([](const Vars& x) { return pow(x[0], 3.0); }, {test::randn({3, 4}, 2)});
}

// ---- NaN through every op ----

namespace {

// One op of engine/ops, applied to inputs of which input 0 gets a NaN at element `at`.
struct NanCase {
  const char* op;
  std::function<Var(const Vars&)> f;
  std::vector<Array> inputs;
  // A linear op (add, reshape, sum, ...) has a derivative that does not depend on its inputs' values,
  // so a NaN input leaves the gradients finite; every other op must send a NaN gradient.
  bool linear = false;
};

std::vector<NanCase> nan_cases() {
  const Array a = test::randn({2, 3}, 11), b = test::randn_positive({2, 3}, 12), pos = test::randn_positive({2, 3}, 13);
  const Array col = test::randn({3, 2}, 14), table = test::randn({4, 3}, 15);
  Mask keep = xt::ones<bool>({2, 3});
  keep(1, 2) = false;  // where() picks b and masked_fill fills only at (1, 2), away from the NaN
  const IndexArray ids{0, 1, 3}, targets{2, 0};  // ids pick rows 0 and 1, where the NaNs go
  return {
      {"add", [](const Vars& v) { return add(v[0], v[1]); }, {a, b}, true},
      {"sub", [](const Vars& v) { return sub(v[0], v[1]); }, {a, b}, true},
      {"mul", [](const Vars& v) { return mul(v[0], v[1]); }, {a, b}},
      {"div (NaN numerator)", [](const Vars& v) { return div(v[0], v[1]); }, {a, b}},
      {"div (NaN divisor)", [](const Vars& v) { return div(v[1], v[0]); }, {b, a}},
      {"neg", [](const Vars& v) { return neg(v[0]); }, {a}, true},
      {"pow", [](const Vars& v) { return pow(v[0], 2.0); }, {a}},
      {"exp", [](const Vars& v) { return exp(v[0]); }, {a}},
      {"log", [](const Vars& v) { return log(v[0]); }, {pos}},
      {"sqrt", [](const Vars& v) { return sqrt(v[0]); }, {pos}},
      {"tanh", [](const Vars& v) { return tanh(v[0]); }, {a}},
      {"sigmoid", [](const Vars& v) { return sigmoid(v[0]); }, {a}},
      {"relu", [](const Vars& v) { return relu(v[0]); }, {a}},
      {"gelu", [](const Vars& v) { return gelu(v[0]); }, {a}},
      {"matmul (left)", [](const Vars& v) { return matmul(v[0], v[1]); }, {a, col}},
      {"matmul (right)", [](const Vars& v) { return matmul(v[1], v[0]); }, {col, a}},
      {"permute", [](const Vars& v) { return permute(v[0], {1, 0}); }, {a}, true},
      {"transpose", [](const Vars& v) { return transpose(v[0]); }, {a}, true},
      {"reshape", [](const Vars& v) { return reshape(v[0], {3, 2}); }, {a}, true},
      {"slice", [](const Vars& v) { return slice(v[0], 0, 0, 2); }, {a}, true},
      {"concat", [](const Vars& v) { return concat({v[0], v[1]}, 0); }, {a, b}, true},
      {"split", [](const Vars& v) { return concat(split(v[0], 1, {2, 1}), 1); }, {a}, true},
      {"gather_rows", [ids](const Vars& v) { return gather_rows(v[0], ids); }, {table}, true},
      {"sum", [](const Vars& v) { return sum(v[0], {1}); }, {a}, true},
      {"mean", [](const Vars& v) { return mean(v[0], {1}); }, {a}, true},
      {"max", [](const Vars& v) { return max(v[0], {1}); }, {a}},
      {"max (all)", [](const Vars& v) { return max(v[0]); }, {a}},
      {"softmax", [](const Vars& v) { return softmax(v[0], 1); }, {a}},
      {"log_softmax", [](const Vars& v) { return log_softmax(v[0], 1); }, {a}},
      {"cross_entropy", [targets](const Vars& v) { return cross_entropy(v[0], targets); }, {a}},
      {"where", [keep](const Vars& v) { return gs::where(keep, v[0], v[1]); }, {a, b}, true},
      {"masked_fill", [keep](const Vars& v) { return masked_fill(v[0], !keep, 0.0); }, {a}, true},
  };
}

}  // namespace

TEST_CASE("a NaN input makes every op's value NaN, and the gradient of every nonlinear op", "[numerics][nan]") {
  // Regression: relu (xt::maximum(x, 0)) and max (xt::amax) returned a finite number for some NaN
  // positions, so a NaN vanished without a trace. Each element in turn is the NaN: where it sits
  // decided whether xt::amax let it through.
  for (const NanCase& c : nan_cases()) {
    for (std::size_t at = 0; at < 5; ++at) {  // 5: every element but (1, 2), which where/masked_fill drop
      INFO(c.op << ", NaN at input 0 element " << at);
      std::vector<Array> in = c.inputs;
      in[0].data()[at] = nan_;
      const Run r = run(c.f, in);
      REQUIRE(has_nan(r.y));
      if (r.y.shape() == in[0].shape()) REQUIRE(std::isnan(r.y.data()[at]));  // elementwise: right there
      bool nan_grad = false;
      for (const Array& g : r.grads) nan_grad = nan_grad || has_nan(g);
      if (c.linear) {
        for (const Array& g : r.grads) REQUIRE(all_finite(g));  // dy/dx does not read x
      } else {
        REQUIRE(nan_grad);
      }
    }
  }
}

TEST_CASE("a NaN in the incoming gradient reaches the inputs' gradients through every op", "[numerics][nan]") {
  for (const NanCase& c : nan_cases()) {
    INFO(c.op);
    const Run clean = run(c.f, c.inputs);
    Array seed = xt::ones_like(clean.y);
    seed.data()[0] = nan_;
    const Run r = run(c.f, c.inputs, &seed);
    REQUIRE(all_finite(r.y));
    REQUIRE(has_nan(r.grads[0]));
  }
}

TEST_CASE("the ops that select (where, masked_fill, pow with p = 0) drop a NaN they do not pick", "[numerics][nan]") {
  // Not a leak: the output does not depend on the element at all (PyTorch and NumPy agree).
  Array a = test::randn({2, 3}, 16);
  a(1, 2) = nan_;
  Mask keep = xt::ones<bool>({2, 3});
  keep(1, 2) = false;
  const Run w = run([&](const Vars& v) { return gs::where(keep, v[0], v[1]); }, {a, test::randn({2, 3}, 17)});
  REQUIRE(all_finite(w.y));
  REQUIRE(w.grads[0](1, 2) == 0.0);
  const Run m = run([&](const Vars& v) { return masked_fill(v[0], !keep, -1.0); }, {a});
  REQUIRE(m.y(1, 2) == -1.0);
  REQUIRE(all_finite(m.grads[0]));
}

TEST_CASE("max and relu of finite inputs keep their values, ties and subgradient", "[numerics][nan]") {
  // The NaN checks changed nothing for finite numbers: relu(0) = 0 with gradient 0, max's ties share.
  const Run r = run([](const Vars& v) { return relu(v[0]); }, {Array{-1.5, 0.0, 2.0, -0.0, 1e-30, -inf_, inf_}});
  REQUIRE(r.y == Array{0.0, 0.0, 2.0, 0.0, 1e-30, 0.0, inf_});
  REQUIRE(r.grads[0] == Array{0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0});
  const Run m = run([](const Vars& v) { return max(v[0], {1}); }, {Array{{1.0, 3.0, 3.0}, {-inf_, -inf_, -5.0}}});
  REQUIRE(m.y == Array{3.0, -5.0});
  REQUIRE(m.grads[0] == Array{{0.0, 0.5, 0.5}, {0.0, 0.0, 1.0}});
}

// ---- gelu at huge inputs ----

#ifndef GRADSCOPE_FLOAT32  // about float64's range (1e300, DBL_MAX); the float32 build's kernels compute in double
TEST_CASE("gelu and its gradient are finite for every finite input, however large", "[numerics][gelu]") {
  // Regression: gelu(1e80) was NaN. erf's rational fits overflowed (inf / inf) once |x|^6 passed the
  // double range; erf is 1 to double precision from |x| = 6 on, so the kernel returns +-1 there.
  const double big = std::numeric_limits<double>::max();
  const Array x{1e52, 1e80, 1e155, 1e300, big, -1e52, -1e80, -1e155, -1e300, -big, 40.0, -40.0, 8.49, -8.49};
  const Array dy = xt::full_like(x, 1.5);
  const Run r = run([](const Vars& v) { return gelu(v[0]); }, {x}, &dy);
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x(i) << ": gelu " << r.y(i) << ", gradient " << r.grads[0](i));
    REQUIRE(std::isfinite(r.y(i)));
    REQUIRE(std::isfinite(r.grads[0](i)));
    if (x(i) >= 40.0) {  // Phi(x) = 1, phi(x) = 0: y = x, dy/dx = 1
      REQUIRE(r.y(i) == x(i));
      REQUIRE(r.grads[0](i) == 1.5);
    } else if (x(i) <= -40.0) {  // Phi(x) = 0 (below the smallest double): y = 0, dy/dx = 0
      REQUIRE(r.y(i) == 0.0);
      REQUIRE(r.grads[0](i) == 0.0);
    }
  }
  // And a NaN stays NaN.
  const Run n = run([](const Vars& v) { return gelu(v[0]); }, {Array{nan_}});
  REQUIRE(std::isnan(n.y(0)));
  REQUIRE(std::isnan(n.grads[0](0)));
}
#endif

// ---- anomaly mode: leaves, constants, parameters, seeds ----

TEST_CASE("anomaly mode also refuses a NaN or Inf leaf, constant, parameter or seed", "[numerics][anomaly]") {
  // Regression: anomaly mode checked op outputs and gradients only, so a NaN that came in with the
  // data or a parameter was reported at the first op that used it, not where it entered.
  Tape tape;
  TapeScope scope(tape);
  tape.anomaly_mode = true;
  const int leaf_line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(tape.leaf(Array{1.0, nan_}),
                      Catch::StartsWith("leaf at test_engine_numerics.cpp:" + std::to_string(leaf_line)) &&
                          Catch::Contains("anomaly mode") && Catch::Contains("(2,)"));
  const int const_line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(tape.constant(Array{inf_}),
                      Catch::StartsWith("const at test_engine_numerics.cpp:" + std::to_string(const_line)) &&
                          Catch::Contains("NaN or Inf"));
  Parameter w(Array{0.5, -inf_}, "w");
  const int param_line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(w * 2.0, Catch::StartsWith("param at test_engine_numerics.cpp:" + std::to_string(param_line)) &&
                                   Catch::Contains("'w'"));
  Var x = tape.leaf(Array{1.0, 2.0});
  Var y = x * x;
  REQUIRE_THROWS_WITH(y.backward(Array{1.0, nan_}), Catch::StartsWith("backward") && Catch::Contains("seed"));
  // Finite ones pass, and with the mode off a NaN leaf is recorded silently.
  REQUIRE_NOTHROW(tape.leaf(Array{1.0, 2.0}));
  tape.anomaly_mode = false;
  REQUIRE(std::isnan(tape.leaf(Array{nan_}).value()(0)));
}

// ---- every op at +-inf and at the largest finite numbers ----

#ifndef GRADSCOPE_FLOAT32  // about float64's range (1e300, DBL_MAX); the float32 build's kernels compute in double
TEST_CASE("every elementwise op at +-inf and +-DBL_MAX gives its limit, value and gradient", "[numerics][inf]") {
  // The value and the gradient each op's definition gives there (the limit where IEEE arithmetic alone
  // would give inf * 0 or inf / inf). NaN inputs: the tests above.
  const double big = std::numeric_limits<double>::max();
  struct Case {
    const char* op;
    std::function<Var(const Var&)> f;
    double x, value, grad;
  };
  const std::vector<Case> cases = {
      {"neg", [](const Var& v) { return neg(v); }, inf_, -inf_, -1.0},
      {"neg", [](const Var& v) { return neg(v); }, -big, big, -1.0},
      {"exp", [](const Var& v) { return exp(v); }, inf_, inf_, inf_},
      {"exp", [](const Var& v) { return exp(v); }, -inf_, 0.0, 0.0},
      {"exp", [](const Var& v) { return exp(v); }, big, inf_, inf_},
      {"exp", [](const Var& v) { return exp(v); }, -big, 0.0, 0.0},
      {"log", [](const Var& v) { return log(v); }, inf_, inf_, 0.0},
      {"log", [](const Var& v) { return log(v); }, big, std::log(big), 1.0 / big},
      {"sqrt", [](const Var& v) { return sqrt(v); }, inf_, inf_, 0.0},
      {"sqrt", [](const Var& v) { return sqrt(v); }, big, std::sqrt(big), 0.5 / std::sqrt(big)},
      {"tanh", [](const Var& v) { return tanh(v); }, inf_, 1.0, 0.0},
      {"tanh", [](const Var& v) { return tanh(v); }, -inf_, -1.0, 0.0},
      {"tanh", [](const Var& v) { return tanh(v); }, big, 1.0, 0.0},
      {"tanh", [](const Var& v) { return tanh(v); }, -big, -1.0, 0.0},
      {"sigmoid", [](const Var& v) { return sigmoid(v); }, inf_, 1.0, 0.0},
      {"sigmoid", [](const Var& v) { return sigmoid(v); }, -inf_, 0.0, 0.0},
      {"sigmoid", [](const Var& v) { return sigmoid(v); }, big, 1.0, 0.0},
      {"sigmoid", [](const Var& v) { return sigmoid(v); }, -big, 0.0, 0.0},
      {"relu", [](const Var& v) { return relu(v); }, inf_, inf_, 1.0},
      {"relu", [](const Var& v) { return relu(v); }, -inf_, 0.0, 0.0},
      {"relu", [](const Var& v) { return relu(v); }, big, big, 1.0},
      {"gelu", [](const Var& v) { return gelu(v); }, inf_, inf_, 1.0},   // x Phi(x) -> x, Phi + x phi -> 1
      {"gelu", [](const Var& v) { return gelu(v); }, -inf_, 0.0, 0.0},   // -> 0 (as at -1e300), and 0
      {"gelu", [](const Var& v) { return gelu(v); }, big, big, 1.0},
      {"gelu", [](const Var& v) { return gelu(v); }, -big, 0.0, 0.0},
      {"pow 2", [](const Var& v) { return pow(v, 2.0); }, -inf_, inf_, -inf_},
      {"pow 2", [](const Var& v) { return pow(v, 2.0); }, big, inf_, inf_},
  };
  for (const Case& c : cases) {
    INFO(c.op << "(" << c.x << ")");
    // Nine elements: every SIMD lane width and the scalar tail see the input.
    const Run r = run([&](const Vars& v) { return c.f(v[0]); }, {Array(xt::full_like(Array::from_shape({9}), c.x))});
    for (std::size_t i = 0; i < 9; ++i) {
      INFO("element " << i << ": value " << r.y(i) << ", gradient " << r.grads[0](i));
      REQUIRE(r.y(i) == c.value);
      REQUIRE(r.grads[0](i) == c.grad);
    }
  }
}
#endif

#ifndef GRADSCOPE_FLOAT32  // about float64's range (1e300, DBL_MAX); the float32 build's kernels compute in double
TEST_CASE("the reductions at +-inf and +-DBL_MAX: softmax, log_softmax, cross_entropy and max stay exact",
          "[numerics][inf]") {
  const double big = std::numeric_limits<double>::max();
  // softmax shifts by the row's max, so the largest finite logits are no overflow.
  const Run s = run([](const Vars& v) { return softmax(v[0], 1); }, {Array{{big, -big, 0.0}, {big, big, 0.0}}});
  REQUIRE(s.y == Array{{1.0, 0.0, 0.0}, {0.5, 0.5, 0.0}});
  REQUIRE(all_finite(s.grads[0]));
  const Run ls = run([](const Vars& v) { return log_softmax(v[0], 1); }, {Array{{big, 0.0}}});
  REQUIRE(ls.y == Array{{0.0, -big}});
  REQUIRE(all_finite(ls.grads[0]));
  // cross-entropy of a sure right answer is 0 with gradient 0; of a sure wrong one, the logit gap.
  const Run right = run([](const Vars& v) { return cross_entropy(v[0], IndexArray{0}); }, {Array{{big, 0.0}}});
  REQUIRE(right.y() == 0.0);
  REQUIRE(right.grads[0] == Array{{0.0, 0.0}});
  const Run wrong = run([](const Vars& v) { return cross_entropy(v[0], IndexArray{1}); }, {Array{{big, 0.0}}});
  REQUIRE(wrong.y() == big);
  REQUIRE(wrong.grads[0] == Array{{1.0, -1.0}});
  // max picks an infinity like any number, and ties share the gradient.
  const Run m = run([](const Vars& v) { return max(v[0], {1}); }, {Array{{inf_, 1.0}, {-inf_, -inf_}}});
  REQUIRE(m.y == Array{inf_, -inf_});
  REQUIRE(m.grads[0] == Array{{1.0, 0.0}, {0.5, 0.5}});
  // Linear ops carry infinities as IEEE arithmetic does, their gradients untouched.
  const Run sum_r = run([](const Vars& v) { return sum(v[0]); }, {Array{inf_, 1.0, big}});
  REQUIRE(sum_r.y() == inf_);
  REQUIRE(sum_r.grads[0] == Array{1.0, 1.0, 1.0});
  const Run add_r = run([](const Vars& v) { return add(v[0], v[1]); }, {Array{inf_, -big}, Array{1.0, -big}});
  REQUIRE(add_r.y == Array{inf_, -inf_});  // -DBL_MAX - DBL_MAX overflows
  REQUIRE(add_r.grads[0] == Array{1.0, 1.0});
}
#endif

}  // namespace test_engine_numerics
