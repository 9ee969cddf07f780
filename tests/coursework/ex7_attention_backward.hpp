// Exercise 7 (docs/coursework.md#ex7): causal attention's backward, by hand.
// q, k, v (B, T, C), C = H * dh, heads merged. Per batch b and head h, Q, K, V are the head's (T, dh)
// column blocks (columns h*dh .. (h+1)*dh - 1) of q, k, v:
//   S = Q K^T / sqrt(dh)                                          (T, T) scores
//   A_ij = e^(S_ij) / sum_{l <= i} e^(S_il) for j <= i,  A_ij = 0 for j > i     causal softmax
//   Y = A V                                                       (T, dh), the head's block of y (B, T, C)
// Backward, with G the head's (T, dh) block of dL/dy, each line the chain rule through one line above:
//   dA = G V^T                  dV = A^T G
//   dS = A * (dA - rowsum(dA * A))                                softmax's backward (exercise 6)
//   dQ = dS K / sqrt(dh)        dK = dS^T Q / sqrt(dh)
// Module 2, the layers. Difficulty: 3/3. Time: about 60 min.
#pragma once

#include <cstddef>

#include "engine/array.hpp"
#include "engine/tape.hpp"

namespace gs::coursework {

// grad = dL/dy (B, T, C), q, k, v (B, T, C) -> {dq, dk, dv}, each (B, T, C). Recompute A from q and
// k. Plain loops over b, h, i, j are fine. Do not call nn's attention_*_backward: this is writing them.
Grads attention_backward(const Array& grad, const Array& q, const Array& k, const Array& v, std::size_t heads);

}  // namespace gs::coursework
