// Reductions (sum, mean, max) over every combination of axes with and without keepdims, the softmax
// family along the last and the first axis, cross-entropy, and their stability for huge logits.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "check.hpp"
#include "engine/engine.hpp"

namespace test_ops_reduce {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::require_gradcheck;
using test::Vars;

namespace {

enum class Kind { sum, mean, max };

// The reference reduction of a (2, 3, 4) array by explicit loops. `axes` are non-negative here; the
// result is laid out with keepdims (reduced axes of size 1), so the test reshapes it as needed.
Array reduce_ref(const Array& x, const std::vector<std::size_t>& axes, Kind kind) {
  Shape keep = {x.shape(0), x.shape(1), x.shape(2)};
  double count = 1.0;
  for (std::size_t a : axes) {
    count *= static_cast<double>(keep[a]);
    keep[a] = 1;
  }
  Array out = Array::from_shape(keep);
  out.fill(kind == Kind::max ? -std::numeric_limits<double>::infinity() : 0.0);
  auto reduced = [&](std::size_t d, std::size_t i) {
    return std::find(axes.begin(), axes.end(), d) != axes.end() ? std::size_t{0} : i;
  };
  for (std::size_t i = 0; i < x.shape(0); ++i)
    for (std::size_t j = 0; j < x.shape(1); ++j)
      for (std::size_t k = 0; k < x.shape(2); ++k) {
        Real& o = out(reduced(0, i), reduced(1, j), reduced(2, k));
        o = kind == Kind::max ? std::max(o, x(i, j, k)) : o + x(i, j, k);
      }
  if (kind == Kind::mean) out /= count;
  return out;
}

struct AxesCase {
  std::vector<int> axes;              // as passed to the op
  std::vector<std::size_t> positive;  // the same axes, normalized
};

const std::vector<AxesCase>& axes_cases() {
  static const std::vector<AxesCase> cases = {
      {{}, {0, 1, 2}},     {{0}, {0}},       {{1}, {1}},          {{2}, {2}},
      {{-1}, {2}},         {{-2}, {1}},      {{-3}, {0}},         {{0, 2}, {0, 2}},
      {{2, 0}, {0, 2}},    {{-1, 0}, {0, 2}}, {{1, -1}, {1, 2}},  {{0, 1, 2}, {0, 1, 2}},
      {{-3, -2, -1}, {0, 1, 2}},
  };
  return cases;
}

Shape without(const Shape& keep, const std::vector<std::size_t>& axes) {
  Shape out;
  for (std::size_t d = 0; d < keep.size(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) out.push_back(keep[d]);
  return out;
}

Var reduce(Kind kind, const Var& x, const std::vector<int>& axes, bool keepdims) {
  switch (kind) {
    case Kind::sum: return sum(x, axes, keepdims);
    case Kind::mean: return mean(x, axes, keepdims);
    case Kind::max: return max(x, axes, keepdims);
  }
  return {};
}

const char* name(Kind kind) { return kind == Kind::sum ? "sum" : kind == Kind::mean ? "mean" : "max"; }

std::string axes_str(const std::vector<int>& axes) {
  std::string s = "{";
  for (int a : axes) s += (s.size() > 1 ? ", " : "") + std::to_string(a);
  return s + "}";
}

// softmax by hand along `axis` of a 2-D array.
Array softmax_ref(const Array& x, std::size_t axis) {
  Array out = x;
  const std::size_t lines = x.shape(1 - axis), len = x.shape(axis);
  for (std::size_t l = 0; l < lines; ++l) {
    auto at = [&](std::size_t i) -> Real& { return axis == 1 ? out(l, i) : out(i, l); };
    double m = -std::numeric_limits<double>::infinity(), s = 0.0;
    for (std::size_t i = 0; i < len; ++i) m = std::max<double>(m, at(i));
    for (std::size_t i = 0; i < len; ++i) s += std::exp(at(i) - m);
    for (std::size_t i = 0; i < len; ++i) at(i) = std::exp(at(i) - m) / s;
  }
  return out;
}

bool all_finite(const Array& x) {
  return std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); });
}

}  // namespace

// ---- sum, mean, max ----

TEST_CASE("sum, mean and max reduce the right axes, with and without keepdims", "[reduce]") {
  Tape tape;
  const Array xv = test::randn({2, 3, 4}, 1);
  Var x = tape.leaf(xv);
  for (Kind kind : {Kind::sum, Kind::mean, Kind::max}) {
    for (const AxesCase& c : axes_cases()) {
      const Array expected = reduce_ref(xv, c.positive, kind);
      for (bool keepdims : {true, false}) {
        INFO(name(kind) << " over axes " << axes_str(c.axes) << ", keepdims " << keepdims);
        Var y = reduce(kind, x, c.axes, keepdims);
        const Shape want = keepdims ? shape_of(expected) : without(shape_of(expected), c.positive);
        REQUIRE(y.shape() == want);
        for (std::size_t i = 0; i < expected.size(); ++i)
          REQUIRE(y.value().data()[i] == Approx(expected.data()[i]).epsilon(test::tol(1e-14, 1e-5)));
      }
    }
  }
}

TEST_CASE("sum, mean and max pass gradcheck over every combination of axes", "[reduce][gradcheck]") {
  const Array xv = test::randn({2, 3, 4}, 2);  // distinct values: max has no ties
  for (Kind kind : {Kind::sum, Kind::mean, Kind::max}) {
    for (const AxesCase& c : axes_cases()) {
      for (bool keepdims : {true, false}) {
        INFO(name(kind) << " over axes " << axes_str(c.axes) << ", keepdims " << keepdims);
        require_gradcheck([&](const Vars& v) { return reduce(kind, v[0], c.axes, keepdims); }, {xv});
      }
    }
  }
}

TEST_CASE("a reduction broadcast back against its input: centring and normalising", "[reduce][shared][gradcheck]") {
  const Array xv = test::randn({3, 4}, 3);
  require_gradcheck([](const Vars& v) { return v[0] - mean(v[0], {-1}, true); }, {xv});
  require_gradcheck([](const Vars& v) { return v[0] / sqrt(mean(v[0] * v[0], {0}, true) + 1e-5); }, {xv});
  require_gradcheck([](const Vars& v) { return v[0] - max(v[0], {1}, true) + sum(v[0], {0}); }, {xv});
  require_gradcheck([](const Vars& v) { return v[0] * sum(v[0]); }, {xv});  // 0-d result broadcast back
}

TEST_CASE("mean's gradient is 1/n and sum's is 1, spread over the reduced axes", "[reduce]") {
  Tape tape;
  Var x = tape.leaf(test::randn({2, 3, 4}, 4));
  sum(mean(x, {0, 2})).backward();
  REQUIRE(xt::allclose(x.grad(), xt::ones<Real>({2, 3, 4}) / 8.0, 0.0, 1e-15));
  sum(sum(x, {1}, true) * 2.0).backward();
  REQUIRE(xt::allclose(x.grad(), xt::ones<Real>({2, 3, 4}) * 2.0));
}

TEST_CASE("the sum over an empty array is zero, and its gradient is empty", "[reduce][empty]") {
  // Regression: xtensor's reducer did pointer arithmetic on an empty array's null data (UBSan).
  Tape tape;
  Var x = tape.leaf(xt::zeros<Real>({2, 0}));
  Var all = sum(x);
  REQUIRE(all.shape() == Shape{});
  REQUIRE(all.value()() == 0.0);
  REQUIRE(sum(x, {1}, true).value() == Array(xt::zeros<Real>({2, 1})));
  REQUIRE(sum(x, {0}).shape() == Shape{0});
  all.backward();
  REQUIRE(x.grad().shape() == x.value().shape());
}

TEST_CASE("max, mean, softmax and log_softmax over a zero-length axis throw, naming op, shape and site",
          "[reduce][empty][errors]") {
  // Regression: the max of no elements read past an empty array (undefined behaviour), and mean
  // divided 0 by 0. A sum over no elements is 0 and stays allowed.
  Tape tape;
  Var x = tape.leaf(xt::zeros<Real>({3, 0}));
  const std::string site = "test_ops_reduce.cpp:";
  const int line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(max(x, {1}), Catch::StartsWith("max at " + site + std::to_string(line)) &&
                                       Catch::Contains("axis 1") && Catch::Contains("(3, 0)") && Catch::Contains("length 0"));
  REQUIRE_THROWS_WITH(max(x), Catch::StartsWith("max at " + site) && Catch::Contains("(3, 0)"));
  REQUIRE_THROWS_WITH(mean(x, {1}), Catch::StartsWith("mean at " + site) && Catch::Contains("(3, 0)"));
  REQUIRE_THROWS_WITH(mean(x), Catch::StartsWith("mean at " + site) && Catch::Contains("length 0"));
  REQUIRE_THROWS_WITH(softmax(x, 1), Catch::StartsWith("softmax at " + site) && Catch::Contains("(3, 0)"));
  REQUIRE_THROWS_WITH(log_softmax(x, -1), Catch::StartsWith("log_softmax at " + site) && Catch::Contains("(3, 0)"));
  REQUIRE(sum(x, {1}).value() == Array(xt::zeros<Real>({3})));
  // Reducing a non-empty axis of an empty array is fine: the result is empty too.
  Var rows = tape.leaf(xt::zeros<Real>({0, 4}));
  REQUIRE(max(rows, {1}).shape() == Shape{0});
  REQUIRE(mean(rows, {1}).shape() == Shape{0});
  REQUIRE(softmax(rows, 1).shape() == Shape{0, 4});
  REQUIRE(log_softmax(rows, 1).shape() == Shape{0, 4});
}

TEST_CASE("max sends the gradient to the arg max, shared equally among ties", "[reduce][max]") {
  Tape tape;
  Var x = tape.leaf(Array{{1.0, 3.0, 3.0, 2.0}, {5.0, 0.0, 5.0, 5.0}});
  Var m = max(x, {-1});
  REQUIRE(m.value() == Array{3.0, 5.0});
  sum(m).backward();
  REQUIRE(xt::allclose(x.grad(), Array{{0.0, 0.5, 0.5, 0.0}, {1.0 / 3.0, 0.0, 1.0 / 3.0, 1.0 / 3.0}}));
  // The tied gradients still add up to the gradient of the max.
  REQUIRE(xt::sum(x.grad())() == Approx(2.0));
  Var all = max(x);
  REQUIRE(all.shape() == Shape{});
  REQUIRE(all.value()() == 5.0);
}

// ---- softmax and log_softmax ----

TEST_CASE("softmax is positive, sums to 1 along its axis and matches a by-hand softmax", "[reduce][softmax]") {
  Tape tape;
  const Array xv = test::randn({3, 5}, 10) * 3.0;
  Var x = tape.leaf(xv);
  for (int axis : {-1, 1, 0, -2}) {
    INFO("axis " << axis);
    const std::size_t a = axis < 0 ? static_cast<std::size_t>(axis + 2) : static_cast<std::size_t>(axis);
    const Array& y = softmax(x, axis).value();
    REQUIRE(y.shape() == xv.shape());
    REQUIRE(xt::all(y > 0.0));
    const Array sums = xt::sum(y, {a});
    REQUIRE(xt::allclose(sums, xt::ones_like(sums), 0.0, test::tol(1e-15, 1e-5)));
    REQUIRE(xt::allclose(y, softmax_ref(xv, a), 0.0, test::tol(1e-15, 1e-5)));
    // log_softmax is the log of it.
    REQUIRE(xt::allclose(log_softmax(x, axis).value(), xt::log(softmax_ref(xv, a)), 0.0, test::tol(1e-14, 1e-5)));
  }
  // Adding a constant along the axis changes nothing (up to the rounding of x + 100).
  REQUIRE(xt::allclose(softmax(x + 100.0).value(), softmax(x).value(), 0.0, test::tol(1e-12, 1e-5)));
}

TEST_CASE("softmax and log_softmax pass gradcheck along the last and the first axis", "[reduce][softmax][gradcheck]") {
  const Array xv = test::randn({3, 4}, 11);
  for (int axis : {-1, 0}) {
    INFO("axis " << axis);
    require_gradcheck([axis](const Vars& v) { return softmax(v[0], axis); }, {xv});
    require_gradcheck([axis](const Vars& v) { return log_softmax(v[0], axis); }, {xv});
  }
  const Array x3 = test::randn({2, 3, 4}, 12);
  require_gradcheck([](const Vars& v) { return softmax(v[0], 1); }, {x3});
  require_gradcheck([](const Vars& v) { return log_softmax(v[0], -3); }, {x3});
  require_gradcheck([](const Vars& v) { return softmax(v[0]); }, {test::randn({6}, 13)});
  // Shared: attention-like weights applied to the same values they were computed from.
  require_gradcheck([](const Vars& v) { return matmul(softmax(matmul(v[0], transpose(v[0]))), v[0]); },
                    {test::randn({3, 2}, 14)});
}

TEST_CASE("softmax and log_softmax of logits around 1e4 are finite and equal those of the shifted logits",
          "[reduce][softmax][stability]") {
  Tape tape;
  const Array base = test::randn({3, 4}, 20);
  const Array big = base + 1e4;
  const Array shifted = big - 1e4;  // exact: what the engine should effectively compute
  for (int axis : {-1, 0}) {
    INFO("axis " << axis);
    const Array w = test::randn({3, 4}, 21);
    Var xb = tape.leaf(big), xs = tape.leaf(shifted);
    Var yb = softmax(xb, axis), ys = softmax(xs, axis);
    REQUIRE(all_finite(yb.value()));
    REQUIRE(xt::allclose(yb.value(), ys.value(), 0.0, 1e-13));
    // Each backward() is a fresh sweep that drops the earlier sweep's gradients: keep a copy.
    sum(yb * tape.constant(w)).backward();
    const Array grad_big = xb.grad();
    sum(ys * tape.constant(w)).backward();
    REQUIRE(all_finite(grad_big));
    REQUIRE(xt::allclose(grad_big, xs.grad(), 0.0, 1e-13));

    Var lb = log_softmax(xb, axis), ls = log_softmax(xs, axis);
    REQUIRE(all_finite(lb.value()));
    REQUIRE(xt::allclose(lb.value(), ls.value(), 0.0, 1e-11));
    sum(lb * tape.constant(w)).backward();
    const Array log_grad_big = xb.grad();
    sum(ls * tape.constant(w)).backward();
    REQUIRE(all_finite(log_grad_big));
    REQUIRE(xt::allclose(log_grad_big, xs.grad(), 0.0, 1e-12));
  }
  // Also for -1e4 and for a spread of 1e4 within a row (e^-1e4 underflows to an exact 0, not a NaN).
  Var spread = tape.leaf(Array{{1e4, 0.0, -1e4}});
  REQUIRE(xt::allclose(softmax(spread).value(), Array{{1.0, 0.0, 0.0}}));
  REQUIRE(log_softmax(spread).value()(0, 2) == Approx(-2e4));
  require_gradcheck([](const Vars& v) { return log_softmax(v[0]); }, {big});
}

// ---- cross_entropy ----

TEST_CASE("cross_entropy is the mean of -log softmax at the targets", "[reduce][cross_entropy]") {
  Tape tape;
  const Array z = test::randn({3, 5}, 30);
  const IndexArray t = {1, 4, 0};
  Var logits = tape.leaf(z);
  Var loss = cross_entropy(logits, t);
  REQUIRE(loss.shape() == Shape{});
  double expected = 0.0;
  for (std::size_t r = 0; r < 3; ++r) {
    double s = 0.0;
    for (std::size_t c = 0; c < 5; ++c) s += std::exp(z(r, c));
    expected += -std::log(std::exp(z(r, static_cast<std::size_t>(t(r)))) / s);
  }
  expected /= 3.0;
  REQUIRE(loss.value()() == Approx(expected).epsilon(test::tol(1e-14, 1e-5)));
  // dL/dz = (softmax(z) - onehot(t)) / rows
  loss.backward();
  const Array p = softmax_ref(z, 1);
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t c = 0; c < 5; ++c)
      REQUIRE(logits.grad()(r, c) ==
              Approx((p(r, c) - (static_cast<std::int64_t>(c) == t(r) ? 1.0 : 0.0)) / 3.0).margin(1e-15));
  // A uniform prediction over C classes costs log C.
  Var flat = tape.leaf(xt::zeros<Real>({2, 7}));
  REQUIRE(cross_entropy(flat, IndexArray{3, 6}).value()() == Approx(std::log(7.0)).epsilon(test::tol(1e-15, 1e-5)));
}

TEST_CASE("cross_entropy passes gradcheck for 2-D, 3-D and 1-D logits", "[reduce][cross_entropy][gradcheck]") {
  const IndexArray t2 = {2, 0, 3};
  require_gradcheck([t2](const Vars& v) { return cross_entropy(v[0], t2); }, {test::randn({3, 4}, 31)});
  const IndexArray t3 = {{1, 1, 0}, {2, 3, 3}};
  require_gradcheck([t3](const Vars& v) { return cross_entropy(v[0], t3); }, {test::randn({2, 3, 4}, 32)});
  const IndexArray t0 = 2;  // a 0-d target for a single vector of logits
  require_gradcheck([t0](const Vars& v) { return cross_entropy(v[0], t0); }, {test::randn({5}, 33)});
  // As the end of a model: logits = x W, and the loss scaled (the incoming gradient is not 1).
  require_gradcheck([t2](const Vars& v) { return cross_entropy(matmul(v[0], v[1]), t2) * 3.0; },
                    {test::randn({3, 2}, 34), test::randn({2, 4}, 35)});
}

TEST_CASE("cross_entropy of logits around 1e4 is finite and equals that of the shifted logits",
          "[reduce][cross_entropy][stability]") {
  Tape tape;
  const Array base = test::randn({4, 6}, 40);
  const Array big = base + 1e4;
  const Array shifted = big - 1e4;
  const IndexArray t = {0, 5, 2, 2};
  Var xb = tape.leaf(big), xs = tape.leaf(shifted);
  Var lb = cross_entropy(xb, t), ls = cross_entropy(xs, t);
  REQUIRE(std::isfinite(lb.value()()));
  REQUIRE(lb.value()() == Approx(ls.value()()).epsilon(1e-10));
  lb.backward();
  const Array grad_big = xb.grad();  // the next backward() drops this sweep's gradients
  ls.backward();
  REQUIRE(all_finite(grad_big));
  REQUIRE(xt::allclose(grad_big, xs.grad(), 0.0, 1e-13));
  // A confidently wrong prediction: the loss is the logit gap, not inf.
  Var wrong = tape.leaf(Array{{1e4, -1e4}});
  REQUIRE(cross_entropy(wrong, IndexArray{1}).value()() == Approx(2e4));
  const IndexArray t1 = {1, 0, 5, 3};
  require_gradcheck([t1](const Vars& v) { return cross_entropy(v[0], t1); }, {big});
}

}  // namespace test_ops_reduce
