// Exercise 11 (docs/coursework.md#ex11): a residual fork's gradient, split into its skip part and its
// branch part, read off the tape.
// A residual connection y = s + f(s) reads the stream position s twice: the add reads it along the skip
// path (the identity), f's first op (a LayerNorm, or q, k and v) along the branch. So
//   dL/ds = (dL/dy, sent back along the skip edge) + (what f's first ops sent back) = skip + branch
// With tape.keep_contributions on, backward() keeps in each entry every gradient sent into it:
// Entry::contributions, each {from: the sender's tape index, grad: what it sent}; their sum is the entry's
// grad. nn's blocks mark their adds' inputs (Var::mark_input): tape.tag(j, k) is nn::skip_edge when
// input k of entry j is the skip path into an add.
//   skip   = the sum of the contributions sent by an entry j that reads s through an input k with
//            tape.tag(j, k) == nn::skip_edge
//   branch = the sum of all the others
// Module 3, the placements. Difficulty: 2/3. Time: about 40 min.
#pragma once

#include "engine/array.hpp"
#include "engine/tape.hpp"
#include "nn/residual_edges.hpp"

namespace gs::coursework {

struct SkipBranchParts {
  Array skip;    // in s's shape
  Array branch;  // in s's shape; skip + branch = s's gradient
};

// The split of entry s's gradient after a backward() with keep_contributions on. Throws gs::Error
// naming "skip_branch_split" when s has no gradient or the tape kept no contributions.
// Do not call gs::nn::split_skip_branch (nn/residual_edges.hpp): this exercise is writing it.
SkipBranchParts skip_branch_split(const Tape& tape, int s);

}  // namespace gs::coursework
