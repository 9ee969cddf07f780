// Reading a tape after backward(): where each gradient came from (explorer/dot.hpp draws it as a picture;
// nn/residual_edges.hpp splits a residual stream's gradient into its skip and branch parts with it).
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

}  // namespace gs
