// The gradient split by path length: how much of a gradient came back through how many residual branches.
//
// Number the sublayers i = 0 .. 2L-1 (block i/2's attention for even i, its MLP for odd i). Each adds
// its branch to the stream, sum = skip + branch, so the stream's Jacobian from one sublayer's input to
// the next is one factor per sublayer,
//   pre:   I + J_i              post:  J_LN_i (I + J_i)          (and the zoo's other forms, nn/block.hpp)
// and the product over the sublayers expands into a sum over the sets S of branches a path goes
// through. Grouping the terms by k = |S|:
//   g = dL/dx = g_0 + g_1 + ... + g_2L,   g_k = the sum over the paths through exactly k branches
// g_0 is the pure skip path (in pre the identity: g_0 at the embedding is the gradient at the top of
// the stream, unchanged). A path through branch i crosses that branch's output edge, the edge from
// the branch into its add, which nn tags branch_out_edge in every placement, once; so g_k is the part
// of the gradient whose paths cross k edges tagged branch_out_edge, and engine/graded_backward.hpp
// computes every g_k exactly in one sweep (docs/gradient-paths.md).
//
// What is reported of a gradient (of one array, or of several taken as one vector, such as all of a
// block's parameters):
//   norm[k]          |g_k|, the Frobenius norm
//   share[k]         <g_k, g> / |g|^2, the projection share: sum_k share[k] = 1 exactly, since
//                    sum_k g_k = g. The g_k are not orthogonal, so a share can be negative (paths of
//                    that length cancel part of the others) or above 1.
//   overlap          sum_k |g_k|^2 / |g|^2: 1 if the g_k are orthogonal, above 1 when they cancel
//   mean_length      the |g_k|-weighted mean path length, sum_k k |g_k| / sum_k |g_k|
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/array.hpp"
#include "engine/graded_backward.hpp"
#include "engine/var.hpp"
#include "nn/transformer_lm.hpp"

namespace gs {
class Tape;
}

namespace gs::analysis {

// Every edge on the tape tagged nn::branch_out_edge, in tape order: the output end of each residual
// branch, one per sublayer of every block that was run (2L for one forward of an L-block model).
std::vector<TapeEdge> branch_out_edges(const Tape& tape);

struct PathSplit {
  std::vector<double> norm;   // |g_k|, k = 0 .. K
  std::vector<double> share;  // <g_k, g> / |g|^2 (all 0 when g = 0)
  double total = 0.0;         // |g|, g = sum_k g_k
  double overlap = 0.0;       // sum_k |g_k|^2 / |g|^2 (0 when g = 0)
  double mean_length = 0.0;   // sum_k k |g_k| / sum_k |g_k| (0 when every g_k is 0)
};

// The split of one gradient taken as one vector over several arrays: coefficients[a][k] is g_k of
// array a (every array with the same number K + 1 of coefficients).
PathSplit path_split(const std::vector<std::vector<Array>>& coefficients);

// The path-length profile of a TransformerLM's last forward, whose loss is `loss` (a scalar on the
// current tape, not yet differentiated or differentiated: the sweep reads the tape only).
struct PathProfile {
  std::size_t max_length = 0;      // K = 2L, the number of branches
  PathSplit emb;                   // the embedding output tok_emb + pos_emb, the stream's input
  std::vector<PathSplit> blocks;   // block l: all of its parameters as one vector
  PathSplit top;                   // the last block's output, the stream's top (every path there has length 0)
  double skip_gain = 0.0;          // |g_0(emb)| / |g(top)|: what the pure skip path does to the gradient
};
PathProfile path_profile(const nn::TransformerLM& model, const Var& loss, Site site = Site::current());

}  // namespace gs::analysis
