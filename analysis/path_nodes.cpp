#include "analysis/path_nodes.hpp"

#include <algorithm>
#include <iterator>
#include <string>

#include "engine/tape.hpp"

namespace gs::analysis {

int last_backward_root(const Tape& tape) {
  for (int i = static_cast<int>(tape.size()) - 1; i >= 0; --i)
    if (tape.entry(i).has_grad) return i;
  return -1;
}

namespace {

// reached[i]: a gradient flows from the loss into entry i, as graded_backward sends it: down from the
// root through every entry's backward rule into its inputs that need a gradient. [lo[i], hi[i]]: the
// fewest and most branch-out edges on such a path; g_k of entry i is 0 for every k outside it (no path
// of that length), so path_split is given only the coefficients inside.
struct LengthBounds {
  std::vector<bool> reached;
  std::vector<std::size_t> lo, hi;
};

LengthBounds length_bounds(const Tape& tape, const Var& loss, const std::vector<TapeEdge>& edges) {
  const auto u = [](int i) { return static_cast<std::size_t>(i); };
  const std::size_t n = tape.size();
  LengthBounds b{std::vector<bool>(n, false), std::vector<std::size_t>(n, edges.size()), std::vector<std::size_t>(n, 0)};
  std::vector<std::vector<bool>> marked(n);
  for (const TapeEdge& edge : edges) {
    marked[u(edge.entry)].resize(tape.entry(edge.entry).inputs.size(), false);
    marked[u(edge.entry)][edge.input] = true;
  }
  b.reached[u(loss.index())] = true, b.lo[u(loss.index())] = 0;
  for (int i = loss.index(); i >= 0; --i) {
    const Entry& e = tape.entry(i);
    if (!b.reached[u(i)] || !e.backward) continue;
    for (std::size_t k = 0; k < e.inputs.size(); ++k) {
      const int in = e.inputs[k];
      if (!tape.entry(in).requires_grad) continue;
      const std::size_t up = k < marked[u(i)].size() && marked[u(i)][k] ? 1 : 0;
      b.reached[u(in)] = true;
      b.lo[u(in)] = std::min(b.lo[u(in)], std::min(b.lo[u(i)] + up, edges.size()));
      b.hi[u(in)] = std::max(b.hi[u(in)], std::min(b.hi[u(i)] + up, edges.size()));
    }
  }
  return b;
}

}  // namespace

EntryPaths entry_path_splits(const Var& loss, const std::vector<int>& entries, Site site) {
  const Tape& tape = loss.tape(site);
  const int n = static_cast<int>(tape.size());
  for (int i : entries)
    if (i < 0 || i >= n)
      fail("entry_path_splits", site, "tape index " + std::to_string(i) + " is not on the tape (size " + std::to_string(n) + ")");
  const std::vector<TapeEdge> edges = branch_out_edges(tape);
  const LengthBounds bounds = length_bounds(tape, loss, edges);
  const auto u = [](int i) { return static_cast<std::size_t>(i); };
  const std::vector<bool>& reached = bounds.reached;
  const std::vector<std::size_t>& lo = bounds.lo;
  const std::vector<std::size_t>& hi = bounds.hi;
  std::vector<Var> wanted;
  for (int i : entries)
    if (reached[u(i)]) wanted.emplace_back(tape, i, tape.generation());
  EntryPaths out;
  out.max_length = edges.size();
  std::vector<std::vector<Array>> g;
  if (!wanted.empty()) g = graded_backward(loss, edges, out.max_length, wanted, site);
  std::size_t next = 0;  // into g, in the order of `wanted`
  for (int i : entries) {
    if (!reached[u(i)]) {
      out.splits.emplace_back();
      continue;
    }
    std::vector<Array>& c = g[next++];
    const std::size_t a = lo[u(i)], b = hi[u(i)];
    const PathSplit inside = path_split({std::vector<Array>(std::make_move_iterator(c.begin() + static_cast<std::ptrdiff_t>(a)),
                                                            std::make_move_iterator(c.begin() + static_cast<std::ptrdiff_t>(b) + 1))});
    c.clear();  // each entry's K + 1 arrays are let go as soon as they are split
    PathSplit split;  // the lengths outside [a, b] carry g_k = 0: norm 0 and share 0
    split.norm.assign(out.max_length + 1, 0.0);
    split.share.assign(out.max_length + 1, 0.0);
    std::copy(inside.norm.begin(), inside.norm.end(), split.norm.begin() + static_cast<std::ptrdiff_t>(a));
    std::copy(inside.share.begin(), inside.share.end(), split.share.begin() + static_cast<std::ptrdiff_t>(a));
    split.total = inside.total;
    split.overlap = inside.overlap;
    const bool any = std::any_of(inside.norm.begin(), inside.norm.end(), [](double x) { return x > 0.0; });
    split.mean_length = any ? inside.mean_length + static_cast<double>(a) : 0.0;  // inside counts k from a
    out.splits.emplace_back(std::move(split));
  }
  return out;
}

}  // namespace gs::analysis
