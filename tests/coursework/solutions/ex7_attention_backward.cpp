// Reference solution of exercise 7 (docs/coursework.md#ex7).
#include "../ex7_attention_backward.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <xtensor/xbuilder.hpp>

namespace gs::coursework {

Grads attention_backward(const Array& grad, const Array& q, const Array& k, const Array& v, std::size_t heads) {
  const std::size_t B = q.shape()[0], T = q.shape()[1], C = q.shape()[2], dh = C / heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  Array dq = xt::zeros<Real>({B, T, C}), dk = xt::zeros<Real>({B, T, C}), dv = xt::zeros<Real>({B, T, C});
  std::vector<double> A(T * T), dA(T * T);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < heads; ++h) {
      const std::size_t c0 = h * dh;  // the head's first column
      // A = causal softmax(Q K^T / sqrt(dh))
      for (std::size_t i = 0; i < T; ++i) {
        double m = -INFINITY;
        for (std::size_t j = 0; j <= i; ++j) {
          double s = 0.0;
          for (std::size_t e = 0; e < dh; ++e) s += q(b, i, c0 + e) * k(b, j, c0 + e);
          A[i * T + j] = s * scale;
          m = std::max(m, A[i * T + j]);
        }
        double z = 0.0;
        for (std::size_t j = 0; j <= i; ++j) z += (A[i * T + j] = std::exp(A[i * T + j] - m));
        for (std::size_t j = 0; j < T; ++j) A[i * T + j] = j <= i ? A[i * T + j] / z : 0.0;
      }
      // dA = G V^T;  dV = A^T G
      for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) {
          double s = 0.0;
          for (std::size_t e = 0; e < dh; ++e) s += grad(b, i, c0 + e) * v(b, j, c0 + e);
          dA[i * T + j] = s;
          for (std::size_t e = 0; e < dh; ++e) dv(b, j, c0 + e) += A[i * T + j] * grad(b, i, c0 + e);
        }
      // dS = A * (dA - rowsum(dA * A)), in place of dA;  dQ = dS K / sqrt(dh);  dK = dS^T Q / sqrt(dh)
      for (std::size_t i = 0; i < T; ++i) {
        double dot = 0.0;
        for (std::size_t j = 0; j < T; ++j) dot += dA[i * T + j] * A[i * T + j];
        for (std::size_t j = 0; j < T; ++j) dA[i * T + j] = A[i * T + j] * (dA[i * T + j] - dot);
        for (std::size_t j = 0; j < T; ++j)
          for (std::size_t e = 0; e < dh; ++e) {
            dq(b, i, c0 + e) += dA[i * T + j] * k(b, j, c0 + e) * scale;
            dk(b, j, c0 + e) += dA[i * T + j] * q(b, i, c0 + e) * scale;
          }
      }
    }
  return {std::move(dq), std::move(dk), std::move(dv)};
}

}  // namespace gs::coursework
