// Reading a tape after backward(): where each gradient came from (explorer/dot.hpp draws it as a picture).
//
// With Tape::keep_contributions on, backward() keeps, for every entry, each gradient that an op sent
// into it (Entry::contributions). The entry's gradient is their sum:
//   dL/dx = sum over the ops c that read x of  (dL/dc) (dc/dx)
// contributions() lists those terms with the op that sent each, and explorer::to_dot() draws every edge of the
// graph labelled with the norm of the term that flowed back along it.
#pragma once

#include <string>
#include <vector>

#include "engine/array.hpp"
#include "engine/error.hpp"
#include "engine/var.hpp"

namespace gs {

class Tape;

// One term of a gradient: what one op sent back into the variable.
struct ContributionInfo {
  int from;           // the sender's tape index (it read the variable in its forward)
  std::string op;     // the sender's op, e.g. "add", "matmul", "layernorm"
  std::string label;  // the sender's label ("" if none)
  std::string scope;  // the sender's module scope, e.g. "blocks.3.attn"
  Array grad;         // what it sent, in the variable's shape
  double norm;        // |grad|, the Frobenius norm
};

// The terms summed into v's gradient by the last backward(), in the order they arrived (senders from
// the highest tape index down). Their sum is v.grad(). Empty for the root of backward (its gradient is
// the seed). Throws gs::Error if v has no gradient, or if the tape kept no contributions
// (set tape.keep_contributions = true before backward).
std::vector<ContributionInfo> contributions(const Var& v, Site site = Site::current());

// The gradient of a stream position s of a residual connection y = s + f(s), split by the path it
// came back along: skip = what the ops that read s through an edge marked EdgeRole::skip sent (the
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

// Where an edge lies in the residual connections y = s + f(s) that the modules marked (Var::mark_input).
// The gradient of s splits into two paths, skip and branch; the branch has two ends:
//   skip        along the identity path into the add (EdgeRole::skip)
//   branch_in   from a stream fork s into the branch's first op, which reads s off the skip path (ln1;
//               or q, k, v)
//   branch_out  the branch's output f(s) into the add (EdgeRole::branch_out)
//   plain       any other edge
// A stream fork is an entry read through a skip edge and by other ops (alpha * s, a link inside
// DeepNorm's skip path, is read by the add alone and is none): where split_skip_branch applies.
enum class EdgePath { plain, skip, branch_in, branch_out };
const char* to_string(EdgePath path);  // "plain", "skip", "branch-in", "branch-out" (the page's CSS classes)
bool is_stream_fork(const Tape& tape, int s);
// paths[j][k]: the path of the edge from input k of entry j into j. What explorer::to_dot draws bold and dashed.
std::vector<std::vector<EdgePath>> edge_paths(const Tape& tape);

}  // namespace gs
