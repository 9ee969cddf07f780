// Hessian-vector products (analysis/hvp.hpp) against Hessians known in closed form, their
// symmetry, the h^2 fall of their error, and the parameters left as they were, bit for bit.
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <xtensor-blas/xlinalg.hpp>

#include "check.hpp"
#include "engine/engine.hpp"
#include "analysis/hvp.hpp"

namespace test_analysis_hvp {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::analysis;

namespace {

double inner(const std::vector<Array>& a, const std::vector<Array>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += xt::sum(a[i] * b[i])();
  return s;
}

double length(const std::vector<Array>& a) { return std::sqrt(inner(a, a)); }

// |a - b| / |b| over all parts
double relative_error(const std::vector<Array>& a, const std::vector<Array>& b) {
  std::vector<Array> d;
  for (std::size_t i = 0; i < a.size(); ++i) d.push_back(a[i] - b[i]);
  return length(d) / length(b);
}

bool same_bits(const Array& a, const Array& b) {
  if (a.shape() != b.shape()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<test::RealBits>(a.data()[i]) != std::bit_cast<test::RealBits>(b.data()[i])) return false;
  return true;
}

Array symmetric(std::size_t n, unsigned seed) {
  const Array m = test::randn({n, n}, seed);
  return Array(m + xt::transpose(m));
}

// L(x, y) = 1/2 x A x^T + x B y^T + 1/2 y C y^T for row vectors x (1, 3), y (1, 2), A and C symmetric:
// its Hessian is the constant block matrix H = [[A, B], [B^T, C]], so
//   H v = (v_x A + v_y B^T,  v_x B + v_y C)   (as rows).
struct Quadratic {
  Array A = symmetric(3, 1), B = test::randn({3, 2}, 2), C = symmetric(2, 3);
  Parameter x{test::randn({1, 3}, 4), "x"}, y{test::randn({1, 2}, 5), "y"};
  Var loss() const {
    Tape& tape = Tape::current();
    Var a = tape.constant(A), b = tape.constant(B), c = tape.constant(C);
    return 0.5 * sum(matmul(x, a) * x) + sum(matmul(x, b) * y) + 0.5 * sum(matmul(y, c) * y);
  }
  std::vector<Array> exact(const std::vector<Array>& v) const {
    using xt::linalg::dot;
    return {Array(dot(v[0], A) + dot(v[1], xt::transpose(B))), Array(dot(v[0], B) + dot(v[1], C))};
  }
};

}  // namespace

TEST_CASE("hvp of a quadratic form is its block matrix times v, and a subset gives the principal block",
          "[curvature][hvp]") {
  Quadratic q;
  const std::vector<Array> v{test::randn({1, 3}, 10), test::randn({1, 2}, 11)};
  const std::vector<Array> hv = hvp([&] { return q.loss(); }, {q.x, q.y}, v);
  // The third derivative is 0: no truncation error, only rounding (~ eps |g| / h ~ 1e-11 relative).
  REQUIRE(relative_error(hv, q.exact(v)) < test::tol(1e-8, 1e-2));

  // With respect to x alone (y held where it is): the principal submatrix A, H v = v_x A.
  const std::vector<Array> hx = hvp([&] { return q.loss(); }, {q.x}, {v[0]});
  REQUIRE(hx.size() == 1);
  REQUIRE(relative_error(hx, {Array(xt::linalg::dot(v[0], q.A))}) < test::tol(1e-8, 1e-2));
}

TEST_CASE("hvp of tanh compositions against their closed-form Hessians", "[curvature][hvp]") {
  const Array w0 = test::randn({5}, 20);
  const Array a = test::randn({5}, 21), c = test::randn({5}, 22);
  const Array v = test::randn({5}, 23);
  Parameter w(w0, "w");
  SECTION("L = sum_i c_i tanh(w_i): a diagonal Hessian") {
    // d/dw tanh = 1 - t^2, d^2/dw^2 tanh = -2 t (1 - t^2)  with t = tanh(w), so
    //   H = diag(c_i (-2 t_i (1 - t_i^2))),   (H v)_i = -2 c_i t_i (1 - t_i^2) v_i.
    const std::vector<Array> hv = hvp([&] { return sum(Tape::current().constant(c) * tanh(w)); }, {w}, {v});
    const Array t = xt::tanh(w0);
    const Array exact = -2.0 * c * t * (1.0 - t * t) * v;
    REQUIRE(relative_error(hv, {exact}) < test::tol(1e-8, 1e-2));
  }
  SECTION("L = tanh(a . w): a rank-one Hessian") {
    // dL/dw = (1 - t^2) a with t = tanh(a . w);  H = -2 t (1 - t^2) a a^T,  H v = -2 t (1 - t^2) (a . v) a.
    const std::vector<Array> hv = hvp([&] { return tanh(sum(Tape::current().constant(a) * w)); }, {w}, {v});
    const double t = std::tanh(xt::sum(a * w0)());
    const Array exact = -2.0 * t * (1.0 - t * t) * xt::sum(a * v)() * a;
    REQUIRE(relative_error(hv, {exact}) < test::tol(1e-8, 1e-2));
  }
}

TEST_CASE("hvp of softmax cross-entropy against its closed-form Hessian", "[curvature][hvp]") {
  // z = x W (1, C) for a fixed row x (1, D) and W (D, C); L = -log softmax(z)_k. With p = softmax(z),
  // dL/dz = p - e_k and d^2L/dz^2 = diag(p) - p p^T. A direction V of W moves z by dz = x V, so
  //   H V = x^T s,   s = (diag(p) - p p^T) dz = p * dz - p (p . dz)      (an outer product, (D, C)).
  const std::size_t D = 4, C = 5;
  const Array x = test::randn({1, D}, 30);
  Parameter W(test::randn({D, C}, 31), "W");
  Array onehot = xt::zeros<Real>({std::size_t(1), C});
  onehot(0, 2) = 1.0;
  auto loss = [&] { return -sum(log_softmax(matmul(Tape::current().constant(x), W)) * Tape::current().constant(onehot)); };
  const Array V = test::randn({D, C}, 32);
  const std::vector<Array> hv = hvp(loss, {W}, {V});

  Array z = xt::linalg::dot(x, W.value());
  Array p = xt::exp(z - xt::amax(z)());
  p /= xt::sum(p)();
  const Array dz = xt::linalg::dot(x, V);
  const Array s = p * dz - p * xt::sum(p * dz)();
  const Array exact = xt::linalg::dot(xt::transpose(x), s);  // (D, 1) (1, C)
  REQUIRE(relative_error(hv, {exact}) < test::tol(1e-7, 1e-2));

  // The same function through softmax instead of log_softmax: L = -log(softmax(z) . e_k).
  auto through_softmax = [&] { return -log(sum(softmax(matmul(Tape::current().constant(x), W)) * Tape::current().constant(onehot))); };
  REQUIRE(relative_error(hvp(through_softmax, {W}, {V}), {exact}) < test::tol(1e-7, 1e-2));
}

namespace {

// A small network whose Hessian has no closed form: L = mean of -log softmax(tanh(x W1) W2)[targets].
struct Mlp {
  Array x = test::randn({6, 4}, 40);
  IndexArray targets = {0, 2, 1, 1, 0, 2};
  Parameter W1{test::randn({4, 3}, 41), "W1"}, W2{test::randn({3, 3}, 42), "W2"};
  Var loss() const { return cross_entropy(matmul(tanh(matmul(Tape::current().constant(x), W1)), W2), targets); }
  std::vector<Parameter> parameters() const { return {W1, W2}; }
  std::vector<Array> direction(unsigned seed) const { return {test::randn({4, 3}, seed), test::randn({3, 3}, seed + 1)}; }
};

}  // namespace

TEST_CASE("hvp is symmetric: u . H v = v . H u", "[curvature][hvp]") {
  Mlp m;
  HessianVectorProduct H([&] { return m.loss(); }, m.parameters());
  for (unsigned seed : {50u, 60u, 70u}) {
    const std::vector<Array> u = m.direction(seed), v = m.direction(seed + 5);
    const double uHv = inner(u, H(v)), vHu = inner(v, H(u));
    INFO("seed " << seed << ": u.Hv = " << uHv << ", v.Hu = " << vHu);
    REQUIRE(std::abs(uHv - vHu) <= test::tol(1e-7, 1e-3) * (std::abs(uHv) + std::abs(vHu)));
  }
  REQUIRE(H.gradients() == 12);  // two gradients per product
  REQUIRE(H.size() == 4 * 3 + 3 * 3);
}

TEST_CASE("hvp's error falls like h^2, with the leading term (h^2 / 6) D^4 L[v, v, v]", "[curvature][hvp]") {
  // L = sum_i c_i tanh(w_i): g_i = c_i f'(w_i) with f = tanh, so the central difference of g is
  //   (g(w + h v) - g(w - h v)) / 2h = c (f'' v + (h^2 / 6) f'''' v^3 + O(h^4))   elementwise,
  // f'' = -2 t (1 - t^2) and f'''' = 8 t (1 - t^2) (2 - 3 t^2) with t = tanh(w).
  const Array w0 = test::randn({8}, 80), c = test::randn({8}, 81);
  Array v = test::randn({8}, 82);
  v /= std::sqrt(xt::sum(v * v)());  // |v| = 1
  Parameter w(w0, "w");
  auto loss = [&] { return sum(Tape::current().constant(c) * tanh(w)); };
  const Array t = xt::tanh(w0);
  const Array exact = -2.0 * c * t * (1.0 - t * t) * v;
  const Array leading = c * 8.0 * t * (1.0 - t * t) * (2.0 - 3.0 * t * t) * v * v * v / 6.0;  // times h^2

  // Least-squares slope of log(error) against log(h) over h = 0.04 .. 0.0025, where truncation
  // (~ h^2 |leading|, 1e-3 .. 1e-6) dwarfs rounding (~ eps |g| / h < 1e-13).
  std::vector<double> log_h, log_err;
  for (double h = 0.04; h > 0.002; h /= 2.0) {
    HvpOptions o;
    o.step = h;
    const Array hv = hvp(loss, {w}, {v}, o)[0];
    const double err = std::sqrt(xt::sum(xt::square(hv - exact))());
    log_h.push_back(std::log(h));
    log_err.push_back(std::log(err));
    // The measured error is the predicted leading term, to O(h^4) / O(h^2) = O(h^2).
    const Array predicted = h * h * leading;
    INFO("h = " << h << ": |error| = " << err << ", |predicted| = " << std::sqrt(xt::sum(predicted * predicted)()));
    // (float32: rounding, not the h^2 term, dominates the error at these steps)
    if (!float32_build) REQUIRE(std::sqrt(xt::sum(xt::square(hv - exact - predicted))()) < 0.05 * err);
  }
  const double n = static_cast<double>(log_h.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < log_h.size(); ++i) mx += log_h[i] / n, my += log_err[i] / n;
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < log_h.size(); ++i) sxy += (log_h[i] - mx) * (log_err[i] - my), sxx += (log_h[i] - mx) * (log_h[i] - mx);
  const double slope = sxy / sxx;
  INFO("slope " << slope);
  if (!float32_build) REQUIRE(slope == Approx(2.0).margin(0.05));  // float32: rounding, not h^2, dominates

  // The automatic step, h = cbrt(eps) max(|w|, 1) / |v| ~ 1.6e-5 here: truncation ~ 1e-10 |leading|,
  // rounding ~ eps |g| / h ~ 1e-11: both far below the tolerance the eigenvalue tools use.
  HessianVectorProduct H(loss, {w});
  const Array automatic = H({v})[0];
  REQUIRE(H.last_step() == Approx(std::cbrt(std::numeric_limits<Real>::epsilon()) * std::max<double>(std::sqrt(xt::sum(w0 * w0)()), 1.0)));
  REQUIRE(std::sqrt(xt::sum(xt::square(automatic - exact))()) < test::tol(1e-9, 1e-2) * std::sqrt(xt::sum(exact * exact)()));
}

TEST_CASE("hvp leaves every parameter's value bit for bit and its grad() untouched, also when the loss throws",
          "[curvature][hvp]") {
  Mlp m;
  const Array W1 = m.W1.value(), W2 = m.W2.value();
  m.W1.grad() = test::randn({4, 3}, 90);  // a gradient a training step accumulated, say
  m.W2.grad() = test::randn({3, 3}, 91);
  const Array G1 = m.W1.grad(), G2 = m.W2.grad();
  HessianVectorProduct H([&] { return m.loss(); }, m.parameters());
  for (unsigned seed : {100u, 110u, 120u}) H(m.direction(seed));  // theta +- h v and back, 3 times
  REQUIRE(same_bits(m.W1.value(), W1));  // a saved copy put back, not theta + h v - h v
  REQUIRE(same_bits(m.W2.value(), W2));
  REQUIRE(same_bits(m.W1.grad(), G1));
  REQUIRE(same_bits(m.W2.grad(), G2));

  // The caller's own tape is not used: a loss recorded there before is still there, its gradient too.
  Tape& mine = Tape::current();
  mine.reset();
  Var before = m.loss();
  const std::size_t size = mine.size();
  H(m.direction(130));
  REQUIRE(mine.size() == size);
  before.backward();  // and a training step's backward still adds into grad()
  REQUIRE(!same_bits(m.W1.grad(), G1));
  mine.reset();

  // A loss that throws on the second gradient (at theta - h v): the values are put back all the same.
  int calls = 0;
  HessianVectorProduct throwing([&] {
    if (++calls == 2) throw Error("loss: failed on purpose");
    return m.loss();
  }, m.parameters());
  REQUIRE_THROWS_WITH(throwing(m.direction(140)), "loss: failed on purpose");
  REQUIRE(same_bits(m.W1.value(), W1));
  REQUIRE(same_bits(m.W2.value(), W2));
}

TEST_CASE("hvp: a parameter the loss does not use has a zero block; v = 0 gives 0 without a gradient",
          "[curvature][hvp]") {
  Quadratic q;
  Parameter unused(Array{1.0, 2.0}, "unused");
  HessianVectorProduct H([&] { return q.loss(); }, {q.x, unused, q.y});
  const std::vector<Array> v{test::randn({1, 3}, 150), Array{3.0, 4.0}, test::randn({1, 2}, 151)};
  const std::vector<Array> hv = H(v);
  REQUIRE(bool(hv[1] == Array{0.0, 0.0}));
  REQUIRE(relative_error({hv[0], hv[2]}, q.exact({v[0], v[2]})) < test::tol(1e-8, 1e-2));
  const std::vector<Array> zero{xt::zeros<Real>({1, 3}), xt::zeros<Real>({2}), xt::zeros<Real>({1, 2})};
  const std::size_t gradients = H.gradients();
  REQUIRE(length(H(zero)) == 0.0);
  REQUIRE(H.gradients() == gradients);

  // The gradient alone, with the loss's value.
  double L = 0.0;
  const std::vector<Array> g = H.gradient(&L);
  REQUIRE(L == Approx(q.loss().value()(0)));
  Tape::current().reset();
  REQUIRE(bool(g[1] == Array{0.0, 0.0}));
}

TEST_CASE("hvp refuses bad input with a one-line error", "[curvature][hvp][errors]") {
  Quadratic q;
  auto loss = [&] { return q.loss(); };
  const std::vector<Array> v{test::randn({1, 3}, 1), test::randn({1, 2}, 2)};
  REQUIRE_THROWS_WITH(hvp(loss, {q.x, q.y}, {v[0]}), Catch::Contains("1 arrays for 2 parameters"));
  REQUIRE_THROWS_WITH(hvp(loss, {q.x, q.y}, {v[0], Array{1.0}}),
                      Catch::Contains("parameter 1 'y'") && Catch::Contains("(1,)") && Catch::Contains("(1, 2)"));
  REQUIRE_THROWS_WITH(hvp(loss, {q.x, q.x}, {v[0], v[0]}), Catch::Contains("listed twice"));
  HvpOptions negative;
  negative.step = -1e-3;
  REQUIRE_THROWS_WITH(hvp(loss, {q.x, q.y}, v, negative), Catch::Contains("step h"));
  REQUIRE_THROWS_WITH(hvp({}, {q.x}, {v[0]}), Catch::Contains("no loss function"));
  REQUIRE_THROWS_WITH(hvp([&] { return matmul(q.x, Tape::current().constant(q.A)); }, {q.x}, {v[0]}),
                      Catch::Contains("must be a scalar") && Catch::Contains("(1, 3)"));
  Tape elsewhere;
  REQUIRE_THROWS_WITH(hvp([&] { return sum(elsewhere.leaf(Array{1.0})); }, {q.x}, {v[0]}),
                      Catch::Contains("another tape"));
  Parameter frozen(Array{1.0}, "frozen");
  frozen.set_requires_grad(false);
  REQUIRE_THROWS_WITH(hvp(loss, {frozen}, {Array{1.0}}), Catch::Contains("'frozen' does not require a gradient"));
}

}  // namespace test_analysis_hvp
