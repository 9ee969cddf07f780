#include "explorer/tape_view.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "analysis/path_nodes.hpp"
#include "engine/tape.hpp"
#include "engine/tools/inspect.hpp"
#include "nn/residual_edges.hpp"

namespace gs::explorer {

Stats stats_of(const Array& x, std::size_t bins) {
  Stats s;
  s.size = x.size();
  double sum = 0.0, sq = 0.0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  std::size_t n = 0;
  for (double v : x) {
    if (!std::isfinite(v)) {
      ++s.nonfinite;
      continue;
    }
    ++n;
    sum += v;
    sq += v * v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  s.norm = s.nonfinite ? nan : std::sqrt(sq);
  if (n == 0) {
    s.mean = s.sd = s.min = s.max = nan;
    return s;
  }
  s.mean = sum / static_cast<double>(n);
  double dev = 0.0;  // two passes: sum (x - mean)^2 is exact where sq/n - mean^2 cancels
  for (double v : x)
    if (std::isfinite(v)) dev += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(dev / static_cast<double>(n));
  s.min = lo;
  s.max = hi;
  s.hist.lo = lo;
  s.hist.hi = hi;
  s.hist.counts.assign(std::max<std::size_t>(1, bins), 0);
  const double width = (hi - lo) / static_cast<double>(s.hist.counts.size());
  for (double v : x) {
    if (!std::isfinite(v)) continue;
    std::size_t b = width > 0.0 ? static_cast<std::size_t>((v - lo) / width) : 0;
    ++s.hist.counts[std::min(b, s.hist.counts.size() - 1)];  // v == hi lands in the last bin
  }
  return s;
}

std::string EdgeView::id() const {
  std::string id = "e";  // (+= rather than "e" + ...: GCC 12 warns falsely, -Wrestrict)
  id += std::to_string(to);
  id += '_';
  id += std::to_string(input);
  return id;
}

std::string parent_scope(const std::string& scope) {
  std::size_t dot = scope.rfind('.');
  if (dot != std::string::npos && scope.find_first_not_of("0123456789", dot + 1) == std::string::npos)
    dot = dot == 0 ? std::string::npos : scope.rfind('.', dot - 1);
  return dot == std::string::npos ? "" : scope.substr(0, dot);
}

namespace {

std::string site_of(const Site& site) {
  std::string file = site.file_name();
  const std::size_t slash = file.rfind('/');
  if (slash != std::string::npos) file = file.substr(slash + 1);
  return file + ":" + std::to_string(site.line());
}

// Where the skip path into a residual add starts: its skip input s, or, where s is a link inside the
// skip path that only the path reads (DeepNorm's alpha * s; B2T's h + x, whose first input h is where
// the MLP branch forks), the stream position before it along the first skip input. -1 if the path has
// no position that other ops read too (no fork, is_stream_fork of nn/residual_edges.hpp).
int skip_start(const Tape& tape, int add) {
  int at = add;
  for (;;) {
    const Entry& e = tape.entry(at);
    int s = -1;
    for (std::size_t k = 0; k < e.inputs.size() && s < 0; ++k)
      if (tape.tag(at, k) == nn::skip_edge) s = e.inputs[k];
    if (s < 0) return -1;
    if (nn::is_stream_fork(tape, s)) return s;
    at = s;  // read through skip edges alone: follow the path one link further back
  }
}

// One node per entry, with its consumers, and one edge per input with its tag and path; the signature
// is the structure as text (read_snapshot compares it).
void read_nodes(const Tape& tape, GraphView& g) {
  const int n = static_cast<int>(tape.size());
  g.nodes.resize(static_cast<std::size_t>(n));
  const std::vector<std::vector<EdgePath>> paths = nn::edge_paths(tape);  // nn/residual_edges.hpp
  for (int i = 0; i < n; ++i) {
    const Entry& e = tape.entry(i);
    NodeView& v = g.nodes[static_cast<std::size_t>(i)];
    v.index = i;
    v.op = e.op;
    v.label = e.label;
    v.scope = e.scope;
    v.site = site_of(e.site);
    v.shape = shape_of(e.value);
    v.requires_grad = e.requires_grad;
    v.inputs = e.inputs;
    for (std::size_t k = 0; k < e.inputs.size(); ++k) {
      auto& c = g.nodes[static_cast<std::size_t>(e.inputs[k])].consumers;
      if (c.empty() || c.back() != i) c.push_back(i);
      g.edges.push_back({e.inputs[k], i, k, tape.tag(i, k), paths[static_cast<std::size_t>(i)][k]});
    }
    g.signature += std::to_string(i) + " " + v.op + " " + v.label + " " + v.scope + " " + shape_str(v.shape);
    for (int in : e.inputs) (g.signature += ' ') += std::to_string(in);
    g.signature += "\n";
  }
}

// Forks: at every residual add (an input tagged skip_edge and one tagged branch_out_edge), the stream position
// s where its skip path starts, read through a skip edge and by other ops (alpha * s, a link inside the
// skip path, is read by the add alone and is no fork). Each fork once, in tape order of its add.
void read_forks(const Tape& tape, GraphView& g) {
  std::map<int, int> fork_of;  // s -> index into g.forks
  for (int j = 0; j < static_cast<int>(tape.size()); ++j) {
    const Entry& e = tape.entry(j);
    bool skip_in = false, branch_out_in = false;
    for (std::size_t k = 0; k < e.inputs.size(); ++k) {
      skip_in = skip_in || tape.tag(j, k) == nn::skip_edge;
      branch_out_in = branch_out_in || tape.tag(j, k) == nn::branch_out_edge;
    }
    if (!skip_in || !branch_out_in) continue;  // not a residual add
    const int s = skip_start(tape, j);
    if (s < 0 || fork_of.count(s)) continue;
    ForkView f{s, j, e.scope, ""};
    for (std::size_t k = 0; k < e.inputs.size(); ++k)
      if (tape.tag(j, k) == nn::branch_out_edge) f.branch = tape.entry(e.inputs[k]).scope;
    fork_of[s] = static_cast<int>(g.forks.size());
    g.nodes[static_cast<std::size_t>(s)].fork = static_cast<int>(g.forks.size());
    g.forks.push_back(f);
  }
}

// Clusters: every scope and every enclosing scope, parents first; each lists the forks inside it.
void read_clusters(GraphView& g) {
  std::map<std::string, std::size_t> cluster_of;
  auto add_cluster = [&](auto&& self, const std::string& scope) -> void {
    if (scope.empty() || cluster_of.count(scope)) return;
    const std::string parent = parent_scope(scope);
    self(self, parent);
    cluster_of[scope] = g.clusters.size();
    g.clusters.push_back({scope, parent, {}});
  };
  for (const NodeView& v : g.nodes) add_cluster(add_cluster, v.scope);
  for (std::size_t f = 0; f < g.forks.size(); ++f)
    for (std::string s = g.forks[f].scope; !s.empty(); s = parent_scope(s))
      g.clusters[cluster_of.at(s)].forks.push_back(static_cast<int>(f));
}

}  // namespace

GraphView read_graph(const Tape& tape) {
  GraphView g;
  read_nodes(tape, g);
  read_forks(tape, g);
  read_clusters(g);
  return g;
}

namespace {

double dot(const Array& a, const Array& b) {
  double s = 0.0;
  auto ia = a.begin();
  for (auto ib = b.begin(); ib != b.end(); ++ia, ++ib) s += *ia * *ib;
  return s;
}

}  // namespace

Snapshot read_snapshot(const Tape& tape, const GraphView& graph, std::size_t step, double loss, std::size_t bins) {
  if (tape.size() != graph.nodes.size())
    throw Error("explorer: step " + std::to_string(step) + "'s tape has " + std::to_string(tape.size()) +
                " entries, the graph recorded earlier " + std::to_string(graph.nodes.size()) +
                ": the snapshots of one run need the same graph every step");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Snapshot s;
  s.step = step;
  s.loss = loss;
  bool any_contribution = false, any_grad = false;
  for (const NodeView& v : graph.nodes) {
    const Entry& e = tape.entry(v.index);
    if (v.op != e.op || v.inputs != e.inputs || v.shape != shape_of(e.value) || v.scope != e.scope)
      throw Error("explorer: step " + std::to_string(step) + ": tape entry " + std::to_string(v.index) + " is " +
                  e.op + " " + shape_str(shape_of(e.value)) + " in '" + e.scope + "', the graph recorded earlier has " +
                  v.op + " " + shape_str(v.shape) + " in '" + v.scope + "' (the graph must be the same every step)");
    NodeStep ns;
    ns.value = stats_of(e.value, bins);
    ns.has_grad = e.has_grad;
    if (e.has_grad) ns.grad = stats_of(e.grad, bins);
    any_contribution = any_contribution || !e.contributions.empty();
    any_grad = any_grad || (e.has_grad && !e.inputs.empty());
    s.nodes.push_back(std::move(ns));
  }
  if (any_grad && !any_contribution)  // (no gradient at all: a pass whose loss was not finite, not backpropagated)
    throw Error("explorer: step " + std::to_string(step) + ": the tape kept no contributions; set "
                "tape.keep_contributions = true before backward()");

  // Edge (j, k) carried the contribution that j sent for its k-th input; an input read twice by one
  // op (x * x) got one contribution per read, in input order.
  for (const EdgeView& edge : graph.edges) {
    const Entry& in = tape.entry(edge.from);
    const std::vector<int>& inputs = tape.entry(edge.to).inputs;
    const auto rank = static_cast<std::size_t>(
        std::count(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(edge.input), edge.from));
    std::size_t seen = 0;
    double n = nan, share = nan;
    for (const Contribution& c : in.contributions)
      if (c.from == edge.to && seen++ == rank) {
        n = norm(c.grad);
        const double gg = dot(in.grad, in.grad);
        share = gg > 0.0 ? dot(c.grad, in.grad) / gg : nan;
        break;
      }
    s.edge_norm.push_back(n);
    s.edge_share.push_back(share);
  }

  for (const ForkView& f : graph.forks) {
    ForkStep fs;
    if (tape.entry(f.at).has_grad) {
      const nn::SkipBranch parts = nn::split_skip_branch(Var(tape, f.at, tape.generation()));
      fs = {norm(parts.skip), norm(parts.branch), parts.skip_parts, parts.branch_parts};
    } else {
      fs.skip = fs.branch = nan;
    }
    s.forks.push_back(fs);
  }
  return s;
}

void read_paths(const Tape& tape, Snapshot& s) {
  s.paths.clear();
  s.path_max = 0;
  const int root = analysis::last_backward_root(tape);
  if (root < 0 || tape.entry(root).value.size() != 1) {
    s.paths_note = "no path split: the tape holds no backward from a scalar loss";
    return;
  }
  std::vector<int> every(tape.size());
  for (std::size_t i = 0; i < every.size(); ++i) every[i] = static_cast<int>(i);
  try {
    const analysis::EntryPaths p = analysis::entry_path_splits(Var(tape, root, tape.generation()), every);
    s.path_max = p.max_length;
    for (const std::optional<analysis::PathSplit>& split : p.splits)
      s.paths.push_back(split ? std::optional<NodePaths>(NodePaths{split->total, split->norm, split->share}) : std::nullopt);
    s.paths_note.clear();
  } catch (const Error& e) {  // what the sweep refuses (gradient hooks): said in the panel, not drawn
    s.paths.clear();
    s.paths_note = std::string("no path split: ") + e.what();
  }
}

}  // namespace gs::explorer
