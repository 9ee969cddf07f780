#include "analysis/eigen.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <string>

#include <xtensor-blas/xlinalg.hpp>

namespace gs::analysis {
namespace {

double dot(const Array& a, const Array& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a.data()[i] * b.data()[i];
  return s;
}

// x <- x + c y
void axpy(Array& x, double c, const Array& y) {
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] += c * y.data()[i];
}

// sum_j s[j] * vectors[j]
Array combine(const std::vector<Array>& vectors, const Array& s, std::size_t column) {
  Array out = xt::zeros<Real>({vectors[0].size()});
  for (std::size_t j = 0; j < vectors.size(); ++j) axpy(out, s(j, column), vectors[j]);
  return out;
}

void check_options(std::size_t n, const LanczosOptions& options) {
  if (n == 0) throw Error("lanczos: the operator has no dimensions (n = 0)");
  if (options.count == 0 || options.count > n)
    throw Error("lanczos: count = " + std::to_string(options.count) + " must be in [1, n = " + std::to_string(n) + "]");
  if (options.max_iterations < options.count)
    throw Error("lanczos: max_iterations = " + std::to_string(options.max_iterations) + " is below count = " +
                std::to_string(options.count));
  if (!(options.tolerance > 0.0) || !std::isfinite(options.tolerance))
    throw Error("lanczos: tolerance = " + std::to_string(options.tolerance) + " must be finite and > 0");
}

// A random unit start vector: with probability 1 it has a component along every eigenvector.
Array random_unit(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Array q = Array::from_shape({n});
  for (Real& v : q) v = normal(rng);
  q /= std::sqrt(dot(q, q));
  return q;
}

// The Krylov basis so far: q_0 .. q_j, their products A q_i, and T's diagonal and off-diagonal.
struct Krylov {
  std::vector<Array> Q, AQ;
  std::vector<double> alpha, beta;
};

// Three-term recurrence  r = A q_j - alpha_j q_j - beta_{j-1} q_{j-1},  then r made orthogonal to
// every q_i again, twice (classical Gram-Schmidt, twice is enough): without this the basis loses
// orthogonality as Ritz values converge, and copies of converged eigenvalues appear. Appends alpha_j;
// returns r (its norm is beta_j).
Array next_residual(Krylov& K, const Array& q, const Array& w) {
  const std::size_t j = K.Q.size() - 1;
  K.alpha.push_back(dot(q, w));
  Array r = w;
  axpy(r, -K.alpha.back(), q);
  if (j > 0) axpy(r, -K.beta.back(), K.Q[j - 1]);
  for (int pass = 0; pass < 2; ++pass)
    for (const Array& qi : K.Q) axpy(r, -dot(qi, r), qi);
  return r;
}

// The `count` largest Ritz pairs of T_j = tridiag(beta, alpha, beta), (j+1) x (j+1): theta and
// y = Q s for T's eigenpairs (theta, s), with the residual |A y - theta y| from the stored products.
// Returns whether all `count` of them are converged (residual <= tolerance |theta|).
bool ritz_pairs(const Krylov& K, const LanczosOptions& options, std::vector<Eigenpair>& pairs) {
  const std::size_t k = K.alpha.size();
  Array T = xt::zeros<Real>({k, k});
  for (std::size_t i = 0; i < k; ++i) T(i, i) = K.alpha[i];
  for (std::size_t i = 0; i + 1 < k; ++i) T(i, i + 1) = T(i + 1, i) = K.beta[i];
  auto [values, vectors] = xt::linalg::eigh(T);  // ascending
  const Array theta = values, S = vectors;
  pairs.clear();
  bool all = k >= options.count;
  for (std::size_t c = 0; c < std::min(options.count, k); ++c) {
    const std::size_t col = k - 1 - c;
    Eigenpair p;
    p.value = theta(col);
    p.vector = combine(K.Q, S, col);  // y = Q s
    Array residual = combine(K.AQ, S, col);
    axpy(residual, -p.value, p.vector);  // A y - theta y, from the stored products
    p.residual = std::sqrt(dot(residual, residual));
    p.converged = p.residual <= options.tolerance * std::abs(p.value);
    all = all && p.converged;
    pairs.push_back(std::move(p));
  }
  return all;
}

}  // namespace

LanczosResult lanczos(const SymmetricOperator& A, std::size_t n, const LanczosOptions& options) {
  check_options(n, options);
  Array q = random_unit(n, options.seed);
  Krylov K;
  LanczosResult result;
  const std::size_t steps = std::min(options.max_iterations, n);
  for (std::size_t j = 0; j < steps; ++j) {
    Array w = A(q);
    if (w.size() != n)
      throw Error("lanczos: the operator returned " + std::to_string(w.size()) + " numbers for n = " + std::to_string(n));
    ++result.iterations;
    K.Q.push_back(q);
    K.AQ.push_back(w);
    const Array r = next_residual(K, q, w);
    const double b = std::sqrt(dot(r, r));
    result.converged = ritz_pairs(K, options, result.pairs);
    // Stop when converged, or when the Krylov space is invariant (r = 0: T's eigenvalues are A's).
    const double scale = std::abs(K.alpha.back()) + (j > 0 ? K.beta.back() : 0.0);
    if (result.converged || b <= 1e-12 * std::max(scale, 1e-300)) break;
    K.beta.push_back(b);
    q = r / b;
  }
  return result;
}

namespace {

CurvatureResult curvature(const LossFunction& loss, const std::vector<Parameter>& parameters, const Array* scale,
                          const LanczosOptions& options, const HvpOptions& hvp_options) {
  const auto start = std::chrono::steady_clock::now();
  HessianVectorProduct H(loss, parameters, hvp_options);
  // x -> D H D x with D = diag(scale) (the identity without a scale).
  SymmetricOperator A = [&](const Array& x) {
    Array dx = scale ? Array(x * *scale) : x;
    Array y = join_flat(H(split_flat(dx, parameters)));
    if (scale) y *= *scale;
    return y;
  };
  LanczosOptions one = options;
  one.count = 1;
  const LanczosResult r = lanczos(A, H.size(), one);
  CurvatureResult c;
  c.lambda_max = r.pairs[0].value;
  c.vector = split_flat(r.pairs[0].vector, parameters);
  c.iterations = r.iterations;
  c.residual = r.pairs[0].residual;
  c.converged = r.converged;
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return c;
}

}  // namespace

CurvatureResult hessian_lambda_max(const LossFunction& loss, const std::vector<Parameter>& parameters,
                                   const LanczosOptions& options, const HvpOptions& hvp_options) {
  return curvature(loss, parameters, nullptr, options, hvp_options);
}

CurvatureResult preconditioned_lambda_max(const LossFunction& loss, const std::vector<Parameter>& parameters,
                                          const std::vector<Array>& preconditioner, const LanczosOptions& options,
                                          const HvpOptions& hvp_options) {
  if (preconditioner.size() != parameters.size())
    throw Error("preconditioned_lambda_max: " + std::to_string(preconditioner.size()) + " preconditioner arrays for " +
                std::to_string(parameters.size()) + " parameters (one per parameter)");
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const std::string which = "parameter " + std::to_string(i) + " '" + parameters[i].name() + "'";
    if (preconditioner[i].shape() != parameters[i].value().shape())
      throw Error("preconditioned_lambda_max: the preconditioner of " + which + " has shape " +
                  shape_str(shape_of(preconditioner[i])) + " but the parameter has shape " +
                  shape_str(parameters[i].shape()));
    for (std::size_t e = 0; e < preconditioner[i].size(); ++e) {
      const double p = preconditioner[i].data()[e];
      if (!(p > 0.0) || !std::isfinite(p))
        throw Error("preconditioned_lambda_max: the preconditioner of " + which + " is " + std::to_string(p) +
                    " at element " + std::to_string(e) + "; every element must be finite and > 0");
    }
  }
  Array scale = join_flat(preconditioner);
  for (Real& s : scale) s = 1.0 / std::sqrt(s);  // D = P^-1/2
  return curvature(loss, parameters, &scale, options, hvp_options);
}

}  // namespace gs::analysis
