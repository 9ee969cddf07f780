// Exercise 15 (docs/coursework.md#ex15): the gradient split by path length, in one graded reverse sweep.
// The gradient of a scalar root r with respect to an entry x is a sum over the paths from x up to r of
// the product of the local Jacobians along each path. Mark some edges (nn marks the output edge of every
// residual branch) and group the paths by the number j of marked edges they cross:
//   dr/dx = g_0(x) + g_1(x) + ... ,   g_j(x) = the sum over the paths that cross exactly j marked edges
// Give each marked edge a formal factor z: dr/dx becomes the polynomial sum_j g_j(x) z^j. Every op's
// backward is linear in the gradient it receives, so the ordinary sweep computes that polynomial if each
// entry's gradient carries its K + 1 coefficients and each backward is applied to each coefficient:
//   coefficient j of entry i, sent back along input k of i, arrives at that input as
//     coefficient j            when the edge (i, k) is not marked
//     coefficient min(j + 1, K) when it is (the factor z; g_K holds "K or more")
// Each part goes through sum_to_shape, as in Tape::backward. Nothing is written into the tape.
// docs/gradient-paths.md derives it; gs::graded_backward (engine/graded_backward.hpp) is the engine's.
// Module 3, the placements. Difficulty: 3/3. Time: about 60 min.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/array.hpp"
#include "engine/graded_backward.hpp"
#include "engine/tape.hpp"

namespace gs::coursework {

// For each tape index of `wanted`, its K + 1 coefficients g_0 .. g_K of d root / d wanted, each in that
// entry's shape (zeros where no path reaches). root is a scalar entry; the seed is 1.
// Do not call gs::graded_backward: this exercise is writing it.
std::vector<std::vector<Array>> graded_sweep(const Tape& tape, int root, const std::vector<TapeEdge>& marked,
                                             std::size_t K, const std::vector<int>& wanted);

}  // namespace gs::coursework
