// The residual connection's two edges on the tape, and reading them back. A residual connection
// y = s + f(s) has two paths from s to y: the skip (identity) path, which hands the gradient back
// unchanged, and the branch f. The block that builds it (nn/block.cpp) marks the edges with the
// engine's neutral EdgeTag (Var::mark_input), and this file gives the two tags their names and their
// meaning: the engine stores them and never reads them.
//   skip_edge        s into the add (or into the first op of a scaled skip, alpha * s), and that op
//                    into the add
//   branch_out_edge  f(s) into the add: the branch's output end (EdgePath::branch_in, below, is its
//                    input end, s into the branch)
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/array.hpp"
#include "engine/error.hpp"
#include "engine/var.hpp"

namespace gs {
class Tape;
}

namespace gs::nn {

inline constexpr EdgeTag skip_edge{1};
inline constexpr EdgeTag branch_out_edge{2};
// "none", "skip", "branch-out" (what the explorer page and the gdb printers call them); "?" for a tag
// that is not one of these.
const char* edge_tag_name(EdgeTag tag);

// The gradient of a stream position s of a residual connection y = s + f(s), split by the path it
// came back along: skip = what the ops that read s through an edge tagged skip_edge sent (the
// identity path), branch = what every other op that reads s sent. skip + branch = s's gradient.
// Needs keep_contributions; throws gs::Error if s has no gradient or no skip edge.
struct SkipBranch {
  Array skip, branch;
  std::size_t skip_parts = 0, branch_parts = 0;  // how many contributions each sum has
};
SkipBranch split_skip_branch(const Var& s, Site site = Site::current());
// The same for tape entry s, which must be a stream fork (is_stream_fork, below), with no checks: for
// a program that walks the whole tape (explorer/dot.hpp).
SkipBranch split_skip_branch(const Tape& tape, int s);

// Where an edge lies in the residual connections y = s + f(s) that the blocks tagged. The gradient of
// s splits into two paths, skip and branch; the branch has two ends:
//   skip        along the identity path into the add (skip_edge)
//   branch_in   from a stream fork s into the branch's first op, which reads s off the skip path (ln1;
//               or q, k, v)
//   branch_out  the branch's output f(s) into the add (branch_out_edge)
//   plain       any other edge
// A stream fork is an entry read through a skip edge and by other ops (alpha * s, a link inside
// DeepNorm's skip path, is read by the add alone and is none): where split_skip_branch applies.
enum class EdgePath { plain, skip, branch_in, branch_out };
const char* to_string(EdgePath path);  // "plain", "skip", "branch-in", "branch-out" (the page's CSS classes)
bool is_stream_fork(const Tape& tape, int s);
// paths[j][k]: the path of the edge from input k of entry j into j. What explorer::to_dot draws bold and dashed.
std::vector<std::vector<EdgePath>> edge_paths(const Tape& tape);

}  // namespace gs::nn
