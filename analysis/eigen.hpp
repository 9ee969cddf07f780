// The top eigenvalues of a symmetric operator by the Lanczos method with full reorthogonalisation,
// and the two the curvature tools need (docs/curvature.md):
//   lambda_max(H)                       the Hessian of a loss with respect to a set of parameters,
//   lambda_max(P^-1/2 H P^-1/2)         the same, preconditioned by a positive diagonal P (for Adam,
//                                       P = sqrt(v_hat) + eps: the step is lr P^-1 g).
// "Top" is the algebraically largest eigenvalue, not the largest in magnitude: a Hessian away from a
// minimum has negative eigenvalues, and the stability of a step is set by the largest positive one.
//
// Lanczos builds an orthonormal basis Q = (q_1 .. q_k) of the Krylov space of a random start vector,
// in which the operator is the tridiagonal T = Q^T A Q; the eigenvalues of T (Ritz values) approach
// A's extreme eigenvalues within a few dozen products. A Ritz pair (theta, y = Q s) has the residual
// r = A y - theta y, and for a symmetric A some eigenvalue lies within |r| of theta. The run stops when
// |r| <= tolerance * |theta| for each of the `count` largest Ritz values, or after max_iterations
// products. The residual is computed from the stored products A q_j, not from the Lanczos recurrence,
// so it holds even when rounding (or the finite differences of hvp) made the basis drift.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "engine/array.hpp"
#include "engine/parameter.hpp"
#include "analysis/hvp.hpp"

namespace gs::analysis {

// y = A x for a symmetric A, on flat vectors of one length n.
using SymmetricOperator = std::function<Array(const Array& x)>;

struct LanczosOptions {
  std::size_t count = 1;             // how many of the largest eigenvalues
  std::size_t max_iterations = 60;   // products A q at most (an hvp costs two gradients each)
  double tolerance = 1e-3;           // converged: |A y - theta y| <= tolerance * |theta| for each pair
  unsigned seed = 1;                 // of the random start vector
};

struct Eigenpair {
  double value = 0.0;     // theta, the Ritz value
  Array vector;           // y, unit length (flat)
  double residual = 0.0;  // |A y - theta y|
  bool converged = false;
};

struct LanczosResult {
  std::vector<Eigenpair> pairs;  // the `count` largest, largest first
  std::size_t iterations = 0;    // products A q made
  bool converged = false;        // every pair converged
};

// The `count` algebraically largest eigenvalues of the n x n symmetric operator A.
LanczosResult lanczos(const SymmetricOperator& A, std::size_t n, const LanczosOptions& options = {});

// lambda_max of a Hessian, with its vector laid out per parameter.
struct CurvatureResult {
  double lambda_max = 0.0;
  std::vector<Array> vector;     // the eigenvector, one array per parameter, unit length overall
  std::size_t iterations = 0;    // Hessian-vector products (2 gradients each)
  double residual = 0.0;         // |H y - lambda y|
  bool converged = false;
  double seconds = 0.0;          // wall time of the whole estimate
};

// lambda_max of the Hessian of loss() with respect to `parameters` (a subset gives the principal
// submatrix on those coordinates). options.count is ignored (1).
CurvatureResult hessian_lambda_max(const LossFunction& loss, const std::vector<Parameter>& parameters,
                                   const LanczosOptions& options = {}, const HvpOptions& hvp_options = {});

// lambda_max of P^-1/2 H P^-1/2 for a positive diagonal P given as one array per parameter (the
// parameter's shape, every element finite and > 0). The vector is in the preconditioned coordinates
// (y = P^1/2 x). P = sqrt(v_hat) + eps from Adam's state gives the matrix whose lambda_max Adam's
// edge of stability compares with (2 + 2 beta1) / ((1 - beta1) lr).
CurvatureResult preconditioned_lambda_max(const LossFunction& loss, const std::vector<Parameter>& parameters,
                                          const std::vector<Array>& preconditioner,
                                          const LanczosOptions& options = {}, const HvpOptions& hvp_options = {});

}  // namespace gs::analysis
