// The gradient's path-length split (paths.hpp) at every node of a pass: one graded sweep over the tape,
// split per tape entry, for the explorer's panel.
//
// For each entry x asked for, g(x) = g_0(x) + ... + g_K(x), g_k the sum over the paths from x to the
// loss through exactly k residual branches (the paths that cross k edges tagged branch_out_edge, K
// the number of such edges on the tape: 2L for one forward of an L-block model). path_split gives
// |g_k| and the projection share <g_k, g> / |g|^2 of each k; the shares sum to 1.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "analysis/paths.hpp"
#include "engine/var.hpp"

namespace gs::analysis {

struct EntryPaths {
  std::size_t max_length = 0;                    // K, the number of branch-out edges on the tape
  std::vector<std::optional<PathSplit>> splits;  // per entry asked for; none where no gradient reaches it
};

// The split of every entry of `entries` (tape indices) of loss's tape, from one graded sweep of `loss`
// (a scalar that needs a gradient; the sweep reads the tape only). An entry gets none when it needs no
// gradient or lies on no path from the loss along which the sweep sends one (its consumers' backward
// rules): there it has no gradient to split. Throws gs::Error naming the caller's site for an index off
// the tape, or what graded_backward refuses (an entry with gradient hooks).
EntryPaths entry_path_splits(const Var& loss, const std::vector<int>& entries, Site site = Site::current());

// The root of the last backward on `tape`: the highest entry with a gradient (every entry backward
// reached lies at or below its root; entries recorded after it have none), or -1 if none has one.
int last_backward_root(const Tape& tape);

}  // namespace gs::analysis
