// Reference solution of exercise 6 (docs/coursework.md#ex6).
#include "../ex6_softmax_backward.hpp"

namespace gs::coursework {

Array softmax_backward(const Array& grad, const Array& y) {
  const std::size_t n = y.shape().back(), rows = n == 0 ? 0 : y.size() / n;
  Array dx = Array::from_shape(shape_of(y));  // (..., n)
  for (std::size_t r = 0; r < rows; ++r) {
    const Real* yr = y.data() + r * n;
    const Real* gr = grad.data() + r * n;
    double dot = 0.0;  // sum_i g_i y_i
    for (std::size_t i = 0; i < n; ++i) dot += gr[i] * yr[i];
    for (std::size_t j = 0; j < n; ++j) dx.data()[r * n + j] = yr[j] * (gr[j] - dot);  // y_j (g_j - dot)
  }
  return dx;
}

}  // namespace gs::coursework
