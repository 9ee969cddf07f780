// Matrix products and axis permutations.
#pragma once

#include <vector>

#include "engine/var.hpp"

namespace gs {

// a @ b. Both at least 2-D: the last two dimensions multiply, (.., n, k) @ (.., k, m) -> (.., n, m),
// and the leading (batch) dimensions broadcast like NumPy's matmul. Runs as one BLAS gemm per batch,
// or as a single gemm when b is 2-D (x (B, T, C) @ W (C, D) is one (B*T, C) @ (C, D) product).
Var matmul(const Var& a, const Var& b, Site site = Site::current());

// Reorders the axes: out.shape[i] = x.shape[axes[i]]. Negative axes count from the end.
Var permute(const Var& x, const std::vector<int>& axes, Site site = Site::current());

// Swaps two axes (by default the last two: the matrix transpose of every batch).
Var transpose(const Var& x, int axis0 = -2, int axis1 = -1, Site site = Site::current());

// The batched product on plain arrays, with BLAS's transpose flags: op(a) @ op(b), where op(m) is m
// or m's last-two-axes transpose. The building block of matmul's forward and backward.
Array batched_matmul(const Array& a, bool transpose_a, const Array& b, bool transpose_b);

// C = alpha op(A) op(B) + beta C on raw row-major matrices (BLAS dgemm, or sgemm for float): op(A) is (n, k), op(B) is
// (k, m), C is (n, m); lda, ldb, ldc are the row strides, larger than a row when the matrix is a block
// of a wider array (one attention head's columns of a (T, C) matrix).
void gemm(bool transpose_a, bool transpose_b, std::size_t n, std::size_t m, std::size_t k, double alpha,
          const double* a, std::size_t lda, const double* b, std::size_t ldb, double beta, double* c, std::size_t ldc);
void gemm(bool transpose_a, bool transpose_b, std::size_t n, std::size_t m, std::size_t k, float alpha,
          const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc);

}  // namespace gs
