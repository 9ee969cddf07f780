// The gradient split by how many marked edges its paths cross, in one reverse sweep.
//
// The gradient of the root r with respect to an entry x is a sum over the paths from x up to r of the
// product of the local Jacobians along the path (the chain rule, expanded). Mark a set E of edges and
// group the paths by the number j of edges of E they cross:
//   dr/dx = sum_{j >= 0} g_j(x),   g_j(x) = sum over the paths that cross exactly j edges of E
// Give every edge of E a formal factor z: then dr/dx becomes a polynomial in z, sum_j g_j(x) z^j, and the
// ordinary sweep computes it if each gradient carries its coefficients. Every op's backward is linear
// in the gradient it receives (at the fixed forward point the tape holds), so it acts on each
// coefficient separately: coefficient j of an op's output goes back to its inputs as coefficient j,
// and as coefficient j + 1 along an edge of E (the factor z). This is exact: g_j(x) is that sum over
// paths, not an estimate, and sum_j g_j(x) is dr/dx up to the rounding of a different order of sums.
//
// The engine knows only the edges, not what they mean: nn marks the output edge of every residual
// branch (nn/residual_edges.hpp), and analysis/paths.hpp turns the split into one by path length.
// The sweep calls each entry's own backward once per coefficient that reached it; it reads the tape
// and writes nothing into it (no Entry::grad, no Parameter::grad, no hooks run).
#pragma once

#include <cstddef>
#include <vector>

#include "engine/array.hpp"
#include "engine/error.hpp"
#include "engine/var.hpp"

namespace gs {

// The edge from input number `input` (in call order) of tape entry `entry` into that entry.
struct TapeEdge {
  int entry = -1;
  std::size_t input = 0;
  friend bool operator==(TapeEdge, TapeEdge) = default;
};

// For each Var of `wanted`, its K + 1 coefficients g_0 .. g_K of d root / d wanted, each in the Var's
// shape: g_j sums the paths from the Var to root that cross exactly j edges of `marked`, and g_K those
// that cross K or more (so sum_j g_j is the whole gradient for any K). A Var on no path from root gets
// K + 1 zero arrays. root must be a scalar (the seed is 1); the other form takes a seed of root's
// shape. Throws gs::Error naming the caller's site for a root that needs no gradient, an edge that is
// not on the tape, a Var of another tape, or an entry on the way with gradient hooks (a hook acts on
// the whole gradient, which this sweep never forms).
std::vector<std::vector<Array>> graded_backward(const Var& root, const std::vector<TapeEdge>& marked,
                                                std::size_t K, const std::vector<Var>& wanted,
                                                Site site = Site::current());
std::vector<std::vector<Array>> graded_backward(const Var& root, const Array& seed, const std::vector<TapeEdge>& marked,
                                                std::size_t K, const std::vector<Var>& wanted,
                                                Site site = Site::current());

}  // namespace gs
