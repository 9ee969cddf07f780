// Exercise 6 (docs/coursework.md#ex6): softmax's backward.
// y = softmax(x) over the last axis, row by row:  y_i = e^(x_i - m) / sum_j e^(x_j - m),  m = max_j x_j.
// Its Jacobian is dy_i/dx_j = y_i (delta_ij - y_j), so with g = dL/dy,
//   dL/dx_j = sum_i g_i y_i (delta_ij - y_j) = y_j (g_j - sum_i g_i y_i)
// It needs only the output y, not x: the tape hands every op its own output (BackwardArgs::out).
// Attention masks a score with -1e9 (nn::kMaskedScore): its y_j is exactly 0, and so is its dL/dx_j.
// Module 2, the layers. Difficulty: 1/3. Time: about 20 min.
#pragma once

#include "engine/array.hpp"

namespace gs::coursework {

// grad = dL/dy and y = softmax(x), both (..., n) -> dL/dx (..., n). Do not call the engine's softmax.
Array softmax_backward(const Array& grad, const Array& y);

}  // namespace gs::coursework
