#include "engine/ops/linalg.hpp"

#include <numeric>

#include <cblas.h>

#include "engine/broadcast.hpp"
#include "engine/ops/axes.hpp"
#include "engine/tape.hpp"

namespace gs {

void gemm(bool transpose_a, bool transpose_b, std::size_t n, std::size_t m, std::size_t k, double alpha,
          const double* a, std::size_t lda, const double* b, std::size_t ldb, double beta, double* c, std::size_t ldc) {
  cblas_dgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void gemm(bool transpose_a, bool transpose_b, std::size_t n, std::size_t m, std::size_t k, float alpha,
          const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

Array batched_matmul(const Array& a, bool transpose_a, const Array& b, bool transpose_b) {
  const std::size_t ra = a.dimension(), rb = b.dimension();
  // op(a) is (n, k) and op(b) is (k, m), read off the last two axes.
  const std::size_t n = transpose_a ? a.shape(ra - 1) : a.shape(ra - 2);
  const std::size_t k = transpose_a ? a.shape(ra - 2) : a.shape(ra - 1);
  const std::size_t m = transpose_b ? b.shape(rb - 2) : b.shape(rb - 1);

  const Shape batch_a(a.shape().begin(), a.shape().end() - 2);
  const Shape batch_b(b.shape().begin(), b.shape().end() - 2);
  const Shape batch = broadcast_shapes(batch_a, batch_b, "matmul", Site::current());
  Shape out_shape = batch;
  out_shape.push_back(n);
  out_shape.push_back(m);
  Array out = Array::from_shape(out_shape);
  if (n == 0 || m == 0 || k == 0) {  // an empty product: BLAS would reject the leading dimensions
    out.fill(0.0);
    return out;
  }
  const std::size_t lda = a.shape(ra - 1), ldb = b.shape(rb - 1);

  // One matrix on the right shared by every batch, e.g. x (B, T, C) @ W (C, D): the batches of a are
  // consecutive rows of one (B*T, C) matrix, so the whole product is a single gemm.
  if (rb == 2 && !transpose_a) {
    gemm(false, transpose_b, a.size() / k, m, k, 1.0, a.data(), lda, b.data(), ldb, 0.0, out.data(), m);
    return out;
  }

  const std::size_t count = std::accumulate(batch.begin(), batch.end(), std::size_t{1}, std::multiplies<>());
  const std::size_t a_matrix = a.shape(ra - 2) * a.shape(ra - 1);
  const std::size_t b_matrix = b.shape(rb - 2) * b.shape(rb - 1);
  for (std::size_t t = 0; t < count; ++t) {
    // Unravel batch index t, and find the matrices of a and b it reads (a size-1 batch axis repeats).
    std::size_t rest = t, a_index = 0, b_index = 0, a_stride = 1, b_stride = 1;
    for (std::size_t d = batch.size(); d-- > 0;) {
      const std::size_t i = rest % batch[d];
      rest /= batch[d];
      const std::size_t from_end = batch.size() - d;  // this axis, counted from the right
      if (from_end <= batch_a.size()) {
        const std::size_t size = batch_a[batch_a.size() - from_end];
        a_index += (size == 1 ? 0 : i) * a_stride;
        a_stride *= size;
      }
      if (from_end <= batch_b.size()) {
        const std::size_t size = batch_b[batch_b.size() - from_end];
        b_index += (size == 1 ? 0 : i) * b_stride;
        b_stride *= size;
      }
    }
    gemm(transpose_a, transpose_b, n, m, k, 1.0, a.data() + a_index * a_matrix, lda, b.data() + b_index * b_matrix, ldb,
         0.0, out.data() + t * n * m, m);
  }
  return out;
}

Var matmul(const Var& a, const Var& b, Site site) {
  const Shape sa = a.shape(site), sb = b.shape(site);
  if (sa.size() < 2 || sb.size() < 2)
    fail("matmul", site, "needs operands of at least 2 dimensions, got " + shape_str(sa) + " @ " + shape_str(sb) +
                             " (reshape a vector to (1, n) or (n, 1))");
  if (sa[sa.size() - 1] != sb[sb.size() - 2])
    fail("matmul", site, "inner dimensions differ: " + shape_str(sa) + " @ " + shape_str(sb));
  broadcast_shapes(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2), "matmul (batch dimensions)",
                   site);
  // C = A B:  dL/dA = dL/dC B^T,  dL/dB = A^T dL/dC  (each over the broadcast batch; the tape sums
  // a broadcast batch dimension back to its input's size)
  return a.tape(site).record("matmul", {a, b}, batched_matmul(a.value(), false, b.value(), false),
                             [](const BackwardArgs& g) -> Grads {
    const Array& A = g.in(0);
    const Array& B = g.in(1);
    Array dB;
    if (g.needs(1) && B.dimension() == 2 && A.dimension() > 2) {
      // B (k, m) is shared by every batch of A (.., n, k): the sum over batches of A^T G is one gemm,
      // A^T G with A seen as one (rows, k) matrix and G as one (rows, m) matrix.
      const std::size_t k = B.shape(0), m = B.shape(1), rows = A.size() / std::max<std::size_t>(k, 1);
      dB = Array::from_shape({k, m});
      if (rows == 0 || k == 0 || m == 0)
        dB.fill(0.0);
      else
        gemm(true, false, k, m, rows, 1.0, A.data(), k, g.grad.data(), m, 0.0, dB.data(), m);
    } else if (g.needs(1)) {
      dB = batched_matmul(A, true, g.grad, false);
    }
    return {g.needs(0) ? batched_matmul(g.grad, false, B, true) : Array{}, std::move(dB)};
  }, site);
}

Var permute(const Var& x, const std::vector<int>& axes, Site site) {
  const Shape shape = x.shape(site);
  const std::size_t rank = shape.size();
  const std::vector<std::size_t> perm = normalize_permutation(axes, shape, "permute", site);
  std::vector<std::size_t> inverse(rank);
  for (std::size_t i = 0; i < rank; ++i) inverse[perm[i]] = i;
  // y = x with axes reordered; the gradient is reordered back by the inverse permutation.
  Array value = xt::transpose(x.value(), perm);
  return x.tape(site).record("permute", {x}, std::move(value), [inverse](const BackwardArgs& g) -> Grads {
    return {Array(xt::transpose(g.grad, inverse))};
  }, site);
}

Var transpose(const Var& x, int axis0, int axis1, Site site) {
  const Shape shape = x.shape(site);
  const std::size_t rank = shape.size();
  const std::size_t a0 = normalize_axis(axis0, shape, "transpose", site);
  const std::size_t a1 = normalize_axis(axis1, shape, "transpose", site);
  std::vector<int> axes(rank);
  std::iota(axes.begin(), axes.end(), 0);
  std::swap(axes[a0], axes[a1]);
  return permute(x, axes, site);
}

}  // namespace gs
