#include "analysis/path_nodes.hpp"

#include <string>

#include "engine/tape.hpp"

namespace gs::analysis {

int last_backward_root(const Tape& tape) {
  for (int i = static_cast<int>(tape.size()) - 1; i >= 0; --i)
    if (tape.entry(i).has_grad) return i;
  return -1;
}

EntryPaths entry_path_splits(const Var& loss, const std::vector<int>& entries, Site site) {
  const Tape& tape = loss.tape(site);
  const int n = static_cast<int>(tape.size());
  for (int i : entries)
    if (i < 0 || i >= n)
      fail("entry_path_splits", site, "tape index " + std::to_string(i) + " is not on the tape (size " + std::to_string(n) + ")");
  // reached[i]: a gradient flows from the loss into entry i, as graded_backward sends it: down from the
  // root through every entry's backward rule into its inputs that need a gradient.
  std::vector<bool> reached(static_cast<std::size_t>(n), false);
  reached[static_cast<std::size_t>(loss.index())] = true;
  for (int i = loss.index(); i >= 0; --i) {
    const Entry& e = tape.entry(i);
    if (!reached[static_cast<std::size_t>(i)] || !e.backward) continue;
    for (int in : e.inputs)
      if (tape.entry(in).requires_grad) reached[static_cast<std::size_t>(in)] = true;
  }
  std::vector<Var> wanted;
  for (int i : entries)
    if (reached[static_cast<std::size_t>(i)]) wanted.emplace_back(tape, i, tape.generation());
  const std::vector<TapeEdge> edges = branch_out_edges(tape);
  EntryPaths out;
  out.max_length = edges.size();
  std::vector<std::vector<Array>> g;
  if (!wanted.empty()) g = graded_backward(loss, edges, out.max_length, wanted, site);
  std::size_t next = 0;  // into g, in the order of `wanted`
  for (int i : entries) {
    if (!reached[static_cast<std::size_t>(i)]) {
      out.splits.emplace_back();
      continue;
    }
    out.splits.emplace_back(path_split({std::move(g[next])}));
    g[next++].clear();  // each entry's K + 1 arrays are let go as soon as they are split
  }
  return out;
}

}  // namespace gs::analysis
