// The explorer's reading of one forward and backward pass: what the tape holds, node by node and
// edge by edge, in plain structs that the page's JSON is written from (page_json.cpp).
//
// Two parts, because a training run repeats the same graph every step:
//   GraphView  the structure (ops, labels, scopes, call sites, shapes, inputs, consumers, edge tags,
//              the residual forks), read once;
//   Snapshot   the numbers of one step (statistics of every value and gradient, the gradient norm
//              along every edge, each fork's skip and branch parts), read at every chosen step.
// Everything is read through the public Tape / Entry API after backward() with
// Tape::keep_contributions on (engine/tape.hpp, nn/residual_edges.hpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "engine/array.hpp"
#include "engine/var.hpp"
#include "nn/residual_edges.hpp"

namespace gs {
class Tape;
}

namespace gs::explorer {

// Counts of the finite elements in `bins` equal bins over [lo, hi] (the last bin includes hi).
struct Histogram {
  double lo = 0.0, hi = 0.0;
  std::vector<std::size_t> counts;
};

// Statistics of one array, over its finite elements (NaN/Inf are counted in `nonfinite` only).
struct Stats {
  std::size_t size = 0;       // elements
  std::size_t nonfinite = 0;  // NaN or Inf elements
  double norm = 0.0;          // sqrt(sum x^2), the Frobenius norm (NaN if any element is not finite)
  double mean = 0.0, sd = 0.0, min = 0.0, max = 0.0;  // sd: the population sd, sqrt(mean (x - mean)^2)
  Histogram hist;
};
Stats stats_of(const Array& x, std::size_t bins = 16);

// How an edge (input -> op) takes part in a residual connection y = s + f(s), as the page draws it:
// nn::EdgePath of nn/residual_edges.hpp (skip, branch_in, branch_out, plain), the classes of to_dot's
// pictures, computed there by edge_paths; nn::to_string(EdgePath) names them ("branch-in", ...).
using nn::EdgePath;

struct NodeView {
  int index = 0;            // the tape index
  std::string op, label, scope;
  std::string site;         // "file.cpp:42", where the user's code created the entry
  Shape shape;
  bool requires_grad = false;
  std::vector<int> inputs;     // tape indices, in call order
  std::vector<int> consumers;  // the entries that read this one, each once, in tape order
  int fork = -1;               // index into GraphView::forks if a residual connection forks here
};

struct EdgeView {
  int from = 0, to = 0;     // input -> op, tape indices
  std::size_t input = 0;    // the input number at `to`
  EdgeTag tag;              // the block's mark (Tape::tag): none, skip_edge or branch_out_edge
  EdgePath path = EdgePath::plain;
  std::string id() const;   // "e<to>_<input>", the id to_dot(svg_ids) gives the SVG edge
};

// A stream position s where a residual connection y = s + f(s) forks: the gradient that reaches s is
// split into the skip part (back along the identity path) and the branch part (back through f).
struct ForkView {
  int at = 0;          // s's tape index
  int add = 0;         // the residual add whose skip path starts at s
  std::string scope;   // the add's scope: the block the connection belongs to, e.g. "blocks.0"
  std::string branch;  // the scope of the add's branch input, e.g. "blocks.0.attn"
};

// A module on the tape (Entry::scope), nested as to_dot draws its clusters: "blocks.0" holds
// "blocks.0.attn". `forks` are the residual connections whose add lies inside it.
struct ClusterView {
  std::string scope;
  std::string parent;        // "" at the top
  std::vector<int> forks;    // indices into GraphView::forks
};

struct GraphView {
  std::vector<NodeView> nodes;  // one per tape entry, nodes[i].index == i
  std::vector<EdgeView> edges;  // one per (op, input), ordered by op then input
  std::vector<ForkView> forks;
  std::vector<ClusterView> clusters;  // in order of first appearance, parents before children
  std::string signature;  // the structure as text: two passes with equal signatures have the same graph
};
GraphView read_graph(const Tape& tape);

// The enclosing module scope, as to_dot nests clusters: "blocks.3.attn" -> "blocks.3" -> "".
std::string parent_scope(const std::string& scope);

struct NodeStep {
  Stats value;
  bool has_grad = false;
  Stats grad;  // dL/d(value), when has_grad
};

struct ForkStep {
  double skip = 0.0, branch = 0.0;  // |skip part|, |branch part| of s's gradient (split_skip_branch)
  std::size_t skip_parts = 0, branch_parts = 0;
};

// A node's gradient g split by path length (analysis/path_nodes.hpp): g = g_0 + ... + g_K, g_k the sum
// over the paths from the node to the loss through exactly k residual branches (K = 2L).
struct NodePaths {
  double total = 0.0;          // |g|, g = sum_k g_k (the ordinary gradient, summed in another order)
  std::vector<double> norm;    // |g_k|, k = 0 .. K
  std::vector<double> share;   // <g_k, g> / |g|^2: the share of |g|^2 carried by the paths of length k
};

struct Snapshot {
  std::size_t step = 0;
  double loss = 0.0;
  std::vector<NodeStep> nodes;     // per GraphView::nodes
  // Per GraphView::edges: |c|, the norm of the gradient c that the op sent back along the edge into
  // its input, and c's share of the input's gradient g, <c, g> / |g|^2 (the shares of an input's
  // contributions sum to 1). NaN where no gradient flowed (the input needs none).
  std::vector<double> edge_norm, edge_share;
  std::vector<ForkStep> forks;     // per GraphView::forks
  // Per GraphView::nodes, when the split was computed (read_paths): its gradient's split by path length,
  // or none where no gradient reaches the node. Empty when it was not, and paths_note says why.
  std::vector<std::optional<NodePaths>> paths;
  std::size_t path_max = 0;        // K, the longest path length counted (the number of branches)
  std::string paths_note;
};

// The numbers of the pass on `tape`, whose structure must be `graph`'s (throws gs::Error naming the
// first entry that differs). Needs keep_contributions on during backward (throws otherwise).
Snapshot read_snapshot(const Tape& tape, const GraphView& graph, std::size_t step, double loss,
                       std::size_t bins = 16);

// Fills s.paths from one graded sweep of the tape's last backward (analysis::entry_path_splits over
// every node, its root the last backward's, analysis::last_backward_root), or s.paths_note with why
// not (no backward on the tape; an entry the sweep refuses, such as one with gradient hooks).
void read_paths(const Tape& tape, Snapshot& s);

}  // namespace gs::explorer
