// Top eigenvalues (analysis/eigen.hpp): Lanczos against matrices whose spectrum is known, and
// lambda_max of a Hessian, of a preconditioned Hessian and of a principal block against LAPACK's
// eigenvalues of the same matrices written out (xt::linalg::eigh), which share no code with Lanczos.
#include <cmath>
#include <string>
#include <vector>

#include <xtensor-blas/xlinalg.hpp>

#include "check.hpp"
#include "engine/engine.hpp"
#include "nn/module.hpp"
#include "nn/optim.hpp"
#include "analysis/hvp.hpp"
#include "analysis/eigen.hpp"

namespace test_analysis_eigen {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::analysis;

namespace {

// A random orthogonal n x n matrix (the Q of a QR factorisation of a normal matrix).
Array orthogonal(std::size_t n, unsigned seed) {
  const Array m = test::randn({n, n}, seed);
  return std::get<0>(xt::linalg::qr(m));
}

// A = Q diag(values) Q^T: a symmetric matrix with exactly these eigenvalues.
Array with_spectrum(const std::vector<double>& values, unsigned seed) {
  const std::size_t n = values.size();
  const Array Q = orthogonal(n, seed);
  Array D = xt::zeros<Real>({n, n});
  for (std::size_t i = 0; i < n; ++i) D(i, i) = values[i];
  return xt::linalg::dot(Q, xt::linalg::dot(D, xt::transpose(Q)));
}

SymmetricOperator times(const Array& A) {
  return [A](const Array& x) { return Array(xt::linalg::dot(A, x)); };
}

double largest_eigenvalue(const Array& symmetric_matrix) {
  const Array values = std::get<0>(xt::linalg::eigh(symmetric_matrix));  // ascending
  return values(values.size() - 1);
}

// L = 1/2 z H z^T for z = (x, y), x (1, 3), y (1, 2), H = [[A, B], [B^T, C]] (symmetric, indefinite).
struct Quadratic {
  Array H = [] {
    const Array m = test::randn({5, 5}, 7);
    return Array(m + xt::transpose(m));
  }();
  Parameter x{test::randn({1, 3}, 8), "x"}, y{test::randn({1, 2}, 9), "y"};
  Var loss() const {
    Tape& tape = Tape::current();
    Var z = concat({Var(x), Var(y)}, 1);  // (1, 5)
    return 0.5 * sum(matmul(z, tape.constant(H)) * z);
  }
};

}  // namespace

TEST_CASE("lanczos finds the algebraically largest eigenvalues of a matrix with a known spectrum",
          "[curvature][lanczos]") {
  // 40 eigenvalues: 5, 3, 2.5, then 34 spread over [-1, 1], and -10, -20, -30 (the largest in
  // magnitude, which power iteration would find and Lanczos's "top" must not return).
  std::vector<double> values{5.0, 3.0, 2.5, -10.0, -20.0, -30.0};
  for (int i = 0; i < 34; ++i) values.push_back(-1.0 + 2.0 * i / 33.0);
  const Array A = with_spectrum(values, 1);
  LanczosOptions o;
  o.count = 3;
  o.tolerance = test::tol(1e-8, 1e-5);
  const LanczosResult r = lanczos(times(A), 40, o);
  REQUIRE(r.converged);
  REQUIRE(r.pairs.size() == 3);
  const double expected[3] = {5.0, 3.0, 2.5};
  for (std::size_t k = 0; k < 3; ++k) {
    const Eigenpair& p = r.pairs[k];
    INFO("pair " << k << ": " << p.value << ", residual " << p.residual << ", after " << r.iterations);
    REQUIRE(p.converged);
    REQUIRE(p.residual <= o.tolerance * std::abs(p.value));
    // For a symmetric matrix some eigenvalue lies within |A y - theta y| of theta.
    REQUIRE(std::abs(p.value - expected[k]) <= p.residual + 1e-12);
    // The reported residual is the true one, recomputed here from A itself.
    const Array Ay = xt::linalg::dot(A, p.vector);
    REQUIRE(std::sqrt(xt::sum(xt::square(Ay - p.value * p.vector))()) == Approx(p.residual).margin(test::tol(1e-12, 1e-5)));
    REQUIRE(std::sqrt(xt::sum(p.vector * p.vector)()) == Approx(1.0).epsilon(test::tol(1e-12, 1e-5)));
  }
  REQUIRE(r.iterations < 40);  // stopped at convergence, before the Krylov space filled the space
}

TEST_CASE("lanczos says when it has not converged, and on a small operator ends exactly", "[curvature][lanczos]") {
  std::vector<double> values;
  for (int i = 0; i < 60; ++i) values.push_back(1.0 + 0.01 * i);  // a tiny gap at the top: slow
  const Array A = with_spectrum(values, 2);
  LanczosOptions few;
  few.max_iterations = 3;
  few.tolerance = 1e-10;
  const LanczosResult r = lanczos(times(A), 60, few);
  REQUIRE(r.iterations == 3);
  REQUIRE(!r.converged);
  REQUIRE(!r.pairs[0].converged);
  REQUIRE(r.pairs[0].residual > few.tolerance * r.pairs[0].value);

  // n = 4 < max_iterations: after 4 products the Krylov space is everything, T's eigenvalues are A's.
  const Array small = with_spectrum({4.0, -1.0, 0.5, 2.0}, 3);
  LanczosOptions o;
  o.tolerance = 1e-12;
  const LanczosResult s = lanczos(times(small), 4, o);
  REQUIRE(s.iterations <= 4);
  REQUIRE(s.pairs[0].value == Approx(4.0).epsilon(1e-12));
}

TEST_CASE("lanczos refuses bad options with a one-line error", "[curvature][lanczos][errors]") {
  const Array A = with_spectrum({1.0, 2.0, 3.0}, 4);
  LanczosOptions o;
  REQUIRE_THROWS_WITH(lanczos(times(A), 0, o), Catch::Contains("n = 0"));
  o.count = 4;
  REQUIRE_THROWS_WITH(lanczos(times(A), 3, o), Catch::Contains("count = 4") && Catch::Contains("n = 3"));
  o.count = 1;
  o.tolerance = 0.0;
  REQUIRE_THROWS_WITH(lanczos(times(A), 3, o), Catch::Contains("tolerance"));
  o.tolerance = 1e-3;
  REQUIRE_THROWS_WITH(lanczos([](const Array&) { return Array{1.0}; }, 3, o), Catch::Contains("returned 1 numbers for n = 3"));
}

TEST_CASE("hessian_lambda_max of a quadratic form is its matrix's largest eigenvalue; a subset its block's",
          "[curvature][lanczos][hvp]") {
  Quadratic q;
  auto loss = [&] { return q.loss(); };
  LanczosOptions o;
  o.tolerance = test::tol(1e-6, 1e-3);
  const CurvatureResult r = hessian_lambda_max(loss, {q.x, q.y}, o);
  REQUIRE(r.converged);
  REQUIRE(r.lambda_max == Approx(largest_eigenvalue(q.H)).epsilon(test::tol(1e-6, 1e-3)));
  REQUIRE(r.residual <= o.tolerance * std::abs(r.lambda_max));
  REQUIRE(r.vector.size() == 2);
  REQUIRE(r.vector[0].shape() == q.x.value().shape());
  REQUIRE(r.iterations >= 1);
  REQUIRE(r.iterations <= 5);
  REQUIRE(r.seconds >= 0.0);

  // With respect to y alone: the principal 2 x 2 block C = H[3:5, 3:5].
  const Array C = xt::view(q.H, xt::range(3, 5), xt::range(3, 5));
  REQUIRE(hessian_lambda_max(loss, {q.y}, o).lambda_max == Approx(largest_eigenvalue(C)).epsilon(1e-6));
}

TEST_CASE("preconditioned_lambda_max is the largest eigenvalue of P^-1/2 H P^-1/2, also with Adam's P",
          "[curvature][lanczos][hvp]") {
  Quadratic q;
  auto loss = [&] { return q.loss(); };
  LanczosOptions o;
  o.tolerance = 1e-6;
  auto expected = [&](const std::vector<Array>& P) {  // D H D with D = diag(P^-1/2), written out
    const Array p = xt::concatenate(xt::xtuple(xt::flatten(P[0]), xt::flatten(P[1])));
    Array D = xt::zeros<Real>({5, 5});
    for (std::size_t i = 0; i < 5; ++i) D(i, i) = 1.0 / std::sqrt(p(i));
    return largest_eigenvalue(xt::linalg::dot(D, xt::linalg::dot(q.H, D)));
  };
  const std::vector<Array> P{Array{{0.5, 2.0, 4.0}}, Array{{0.1, 1.0}}};
  const CurvatureResult r = preconditioned_lambda_max(loss, {q.x, q.y}, P, o);
  REQUIRE(r.converged);
  REQUIRE(r.lambda_max == Approx(expected(P)).epsilon(1e-6));
  REQUIRE(r.lambda_max != Approx(largest_eigenvalue(q.H)).epsilon(1e-2));  // P made a difference

  // P = sqrt(v_hat) + eps from Adam after three steps on this loss.
  struct Two : nn::Module {
    Parameter x, y;
    Two(const Parameter& a, const Parameter& b) {
      x = add_parameter("x", a.value());
      y = add_parameter("y", b.value());
    }
  } model(q.x, q.y);
  Quadratic on_model;
  on_model.x = model.x;
  on_model.y = model.y;
  nn::Adam adam(model.named_parameters());
  REQUIRE_THROWS_WITH(adam.preconditioner(), Catch::Contains("no step"));
  for (int t = 0; t < 3; ++t) {
    Tape::current().reset();
    on_model.loss().backward();
    adam.step(1e-3);
    adam.zero_grad();
  }
  Tape::current().reset();
  const std::vector<Array> adam_P = adam.preconditioner();
  REQUIRE(adam_P.size() == 2);
  REQUIRE(adam_P[1].shape() == model.y.value().shape());
  const double r_adam = preconditioned_lambda_max([&] { return on_model.loss(); }, {model.x, model.y}, adam_P, o).lambda_max;
  REQUIRE(r_adam == Approx(expected(adam_P)).epsilon(test::tol(1e-6, 1e-3)));
}

TEST_CASE("lambda_max of a network's Hessian agrees with the eigenvalues of that Hessian written out",
          "[curvature][lanczos][hvp]") {
  // The Hessian written out column by column (H e_i, one hvp each), symmetrised, and handed to LAPACK.
  const Array x = test::randn({6, 4}, 40);
  const IndexArray targets = {0, 2, 1, 1, 0, 2};
  Parameter W1(test::randn({4, 3}, 41), "W1"), W2(test::randn({3, 3}, 42), "W2");
  auto loss = [&] { return cross_entropy(matmul(tanh(matmul(Tape::current().constant(x), W1)), W2), targets); };
  HessianVectorProduct H(loss, {W1, W2});
  const std::size_t n = H.size();
  Array dense = xt::zeros<Real>({n, n});
  for (std::size_t i = 0; i < n; ++i) {
    Array e = xt::zeros<Real>({n});
    e(i) = 1.0;
    const Array column = join_flat(H(split_flat(e, H.parameters())));
    for (std::size_t j = 0; j < n; ++j) dense(j, i) = column(j);
  }
  const Array symmetric = 0.5 * (dense + xt::transpose(dense));
  REQUIRE(xt::amax(xt::abs(dense - symmetric))() < test::tol(1e-7, 1e-3));
  LanczosOptions o;
  o.tolerance = test::tol(1e-6, 1e-3);
  const CurvatureResult r = hessian_lambda_max(loss, {W1, W2}, o);
  REQUIRE(r.converged);
  REQUIRE(r.lambda_max == Approx(largest_eigenvalue(symmetric)).epsilon(test::tol(1e-5, 1e-2)));
}

TEST_CASE("preconditioned_lambda_max refuses a preconditioner of the wrong count, shape or sign",
          "[curvature][lanczos][errors]") {
  Quadratic q;
  auto loss = [&] { return q.loss(); };
  REQUIRE_THROWS_WITH(preconditioned_lambda_max(loss, {q.x, q.y}, {Array{{1.0, 1.0, 1.0}}}),
                      Catch::Contains("1 preconditioner arrays for 2 parameters"));
  REQUIRE_THROWS_WITH(preconditioned_lambda_max(loss, {q.x, q.y}, {Array{{1.0, 1.0, 1.0}}, Array{1.0, 1.0}}),
                      Catch::Contains("'y'") && Catch::Contains("(2,)") && Catch::Contains("(1, 2)"));
  REQUIRE_THROWS_WITH(preconditioned_lambda_max(loss, {q.x, q.y}, {Array{{1.0, 0.0, 1.0}}, Array{{1.0, 1.0}}}),
                      Catch::Contains("'x'") && Catch::Contains("element 1") && Catch::Contains("> 0"));
}

}  // namespace test_analysis_eigen
