// The tape as a Graphviz DOT graph: explorer/dot.hpp.
#include "explorer/dot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "engine/tape.hpp"
#include "nn/residual_edges.hpp"

namespace gs::explorer {

using nn::EdgePath;  // where an edge lies in a residual connection (nn/residual_edges.hpp)

namespace {

// ---- reading the tape ----

// The gradient norm that consumer j sent back into its k-th input, or -1 if none was kept. An input
// read twice by one op (x * x) got one contribution per read, in input order.
double edge_norm(const Tape& tape, int j, std::size_t k) {
  const Entry& consumer = tape.entry(j);
  const int a = consumer.inputs[k];
  const std::size_t rank = static_cast<std::size_t>(std::count(consumer.inputs.begin(), consumer.inputs.begin() +
                                                                   static_cast<std::ptrdiff_t>(k), a));
  std::size_t seen = 0;
  for (const Contribution& c : tape.entry(a).contributions)
    if (c.from == j && seen++ == rank) return norm(c.grad);
  return -1.0;
}

// ---- writing DOT ----

std::string dot_string(const std::string& s) {  // a DOT string literal; "\n" in s stays a line break
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out + '"';
}

std::string html(const std::string& s) {  // for the legend's HTML label
  std::string out;
  for (char c : s) out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

std::string three_digits(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

// log10 of the edge norms, mapped onto hue 0.66 (blue, the smallest) .. 1 (red, the largest). The
// scale spans at most 4 decades below the largest: smaller norms (a key bias's 1e-18, which softmax
// makes exactly 0 in exact arithmetic) are all drawn blue.
struct ColourScale {
  static constexpr double decades = 4.0;
  double lo = 0.0, hi = 0.0;
  bool any = false;
  void add(double n) {
    if (n <= 0.0) return;
    const double l = std::log10(n);
    lo = any ? std::min(lo, l) : l;
    hi = any ? std::max(hi, l) : l;
    any = true;
  }
  std::string colour(double n) const {
    const double t = n <= 0.0 || hi <= low() ? (n <= 0.0 ? 0.0 : 1.0)
                                             : std::max(0.0, (std::log10(n) - low()) / (hi - low()));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f 0.90 0.85", std::fmod(0.66 + 0.34 * t, 1.0));  // through violet
    return buf;
  }
  double low() const { return std::max(lo, hi - decades); }
};

// The enclosing scope: "blocks.3.attn" -> "blocks.3" -> "". A numbered component belongs to the name
// before it, so that "blocks.3" is one module (one cluster), not "3" inside "blocks".
std::string parent_scope(const std::string& scope) {
  std::size_t dot = scope.rfind('.');
  if (dot != std::string::npos && scope.find_first_not_of("0123456789", dot + 1) == std::string::npos)
    dot = dot == 0 ? std::string::npos : scope.rfind('.', dot - 1);
  return dot == std::string::npos ? "" : scope.substr(0, dot);
}

struct ScopeTree {
  std::vector<int> entries;                   // recorded directly in this scope
  std::vector<std::string> children;          // full dotted names, in order of first appearance
};

void write_scope(std::string& out, const std::map<std::string, ScopeTree>& tree, const std::string& scope,
                 const std::vector<std::string>& nodes, int depth, int& cluster, bool ids) {
  const ScopeTree& t = tree.at(scope);
  const std::string indent(static_cast<std::size_t>(2 * depth + 2), ' ');
  for (int i : t.entries) out += indent + nodes[static_cast<std::size_t>(i)];
  for (const std::string& child : t.children) {
    const std::string name = scope.empty() ? child : child.substr(scope.size() + 1);  // "blocks.0", then "attn"
    out += indent + "subgraph cluster_" + std::to_string(cluster++) + " {\n";
    out += indent + "  label=" + dot_string(name) + "; style=rounded; color=\"#888888\"; fontcolor=\"#444444\";\n";
    out += indent + (depth == 0 ? "  bgcolor=\"#f7f7f7\";\n" : "  bgcolor=\"#ffffff\";\n");
    if (ids) out += indent + "  id=" + dot_string("cluster:" + child) + "; class=\"scope\";\n";
    write_scope(out, tree, child, nodes, depth + 1, cluster, ids);
    out += indent + "}\n";
  }
}

bool visible(const Tape& tape, int i, const DotOptions& options) {
  return options.show_constants || std::string(tape.entry(i).op) != "const";
}

// ---- the residual connections ----

// Residual connections y = s + f(s), as the blocks tagged them (nn/residual_edges.hpp). Skip edges run
// from the stream position s along the skip path into the add; the branch_in edges from s into the
// branch's first ops (ln1; or q, k, v); the branch_out edge brings f(s) into the add. At s the gradient
// splits: the skip path sends back one part, the branch the rest.
struct Residuals {
  std::map<std::pair<int, int>, EdgePath> path;  // (from, to) -> the path of every edge that is not plain
  std::map<int, std::string> split;              // s -> "skip |skip part| | branch |branch part|"
  std::vector<bool> on_stream, fork;             // per entry
};

Residuals read_residuals(const Tape& tape) {
  const int n = static_cast<int>(tape.size());
  Residuals r;
  r.on_stream.assign(static_cast<std::size_t>(n), false);
  r.fork = r.on_stream;
  const std::vector<std::vector<EdgePath>> paths = nn::edge_paths(tape);
  for (int j = 0; j < n; ++j) {
    const Entry& e = tape.entry(j);
    for (std::size_t k = 0; k < e.inputs.size(); ++k) {
      const EdgePath p = paths[static_cast<std::size_t>(j)][k];
      const auto from = static_cast<std::size_t>(e.inputs[k]);
      if (p == EdgePath::plain) continue;
      r.path[{e.inputs[k], j}] = p;
      if (p == EdgePath::skip) r.on_stream[from] = r.on_stream[static_cast<std::size_t>(j)] = true;
      if (p == EdgePath::branch_in) r.fork[from] = true;
    }
  }
  for (int s = 0; s < n; ++s) {
    if (!r.fork[static_cast<std::size_t>(s)] || tape.entry(s).contributions.empty()) continue;
    const nn::SkipBranch parts = nn::split_skip_branch(tape, s);
    r.split[s] = "skip " + three_digits(norm(parts.skip)) + " | branch " + three_digits(norm(parts.branch));
  }
  return r;
}

// ---- edges ----

struct Edge {
  int from, to;
  std::size_t input;  // the input number of `from` at `to`
  double norm;        // -1: none kept
};

// Every drawn edge with the norm of the gradient sent back along it, and the colour scale they span.
std::vector<Edge> read_edges(const Tape& tape, const DotOptions& options, ColourScale& scale) {
  std::vector<Edge> edges;
  for (int j = 0; j < static_cast<int>(tape.size()); ++j) {
    const Entry& e = tape.entry(j);
    if (!visible(tape, j, options)) continue;
    for (std::size_t k = 0; k < e.inputs.size(); ++k) {
      if (!visible(tape, e.inputs[k], options)) continue;
      edges.push_back({e.inputs[k], j, k, edge_norm(tape, j, k)});
      scale.add(edges.back().norm);
    }
  }
  return edges;
}

// One edge's line: coloured and labelled by its norm; skip bold, both ends of the branch dashed.
std::string edge_line(const Edge& e, EdgePath p, const ColourScale& scale, const DotOptions& options) {
  std::string attrs;
  if (e.norm < 0.0) {
    attrs = "color=\"#bbbbbb\"";
  } else {
    const std::string c = scale.colour(e.norm);
    const std::string prefix = p == EdgePath::skip ? "skip " : p == EdgePath::branch_in ? "branch " : "";
    attrs = "label=" + dot_string(prefix + three_digits(e.norm)) + ", color=" + dot_string(c) + ", fontcolor=" + dot_string(c);
  }
  if (p == EdgePath::skip) attrs += ", penwidth=3.5, weight=8";
  if (p == EdgePath::branch_in || p == EdgePath::branch_out) attrs += ", penwidth=2, style=dashed";
  if (options.svg_ids)
    attrs += ", id=\"e" + std::to_string(e.to) + "_" + std::to_string(e.input) + "\", class=\"" + to_string(p) + "\"";
  return "  n" + std::to_string(e.from) + " -> n" + std::to_string(e.to) + " [" + attrs + "];\n";
}

// ---- nodes ----

// Entry i's line: index, op, label, shape, |g| and at a fork the split; styled by its kind.
std::string node_line(const Tape& tape, int i, const Residuals& r, const DotOptions& options) {
  const Entry& e = tape.entry(i);
  const std::string op = e.op;
  const bool stream = r.on_stream[static_cast<std::size_t>(i)];
  std::string label = "#" + std::to_string(i) + " " + op;
  if (!e.label.empty()) label += "\n" + e.label;
  label += "\n" + shape_str(shape_of(e.value));
  if (e.has_grad) label += "\n|g| " + three_digits(norm(e.grad));
  if (const auto it = r.split.find(i); it != r.split.end()) label += "\n" + it->second;
  std::string style = op == "param"   ? "shape=box, style=filled, fillcolor=\"#dbe9f6\""
                      : op == "leaf"  ? "shape=ellipse, style=filled, fillcolor=\"#eeeeee\""
                      : op == "const" ? "shape=ellipse, style=dashed"
                      : stream        ? "shape=box, style=\"rounded,filled\", fillcolor=\"#fff2b3\""
                                      : "shape=box, style=rounded";
  if (stream) style += ", group=stream";
  if (options.svg_ids) style += ", id=\"n" + std::to_string(i) + "\"";
  return "n" + std::to_string(i) + " [label=" + dot_string(label) + ", " + style + "];\n";
}

// Registers entry i under its scope, and every enclosing scope under its parent.
void add_to_tree(std::map<std::string, ScopeTree>& tree, int i, std::string scope) {
  tree[scope].entries.push_back(i);
  while (!scope.empty()) {
    const std::string parent = parent_scope(scope);
    std::vector<std::string>& siblings = tree[parent].children;
    if (std::find(siblings.begin(), siblings.end(), scope) == siblings.end()) siblings.push_back(scope);
    scope = parent;
  }
}

// ---- the legend ----

std::string legend(const ColourScale& scale) {
  std::string rows = "<tr><td colspan=\"2\"><b>legend</b></td></tr>";
  rows += "<tr><td colspan=\"2\" align=\"left\">arrows run forward (input to op); an arrow's number is the norm<br "
          "align=\"left\"/>of the gradient that op sent back into that input</td></tr>";
  if (scale.any)
    for (double t : {0.0, 0.5, 1.0}) {
      const double v = std::pow(10.0, scale.low() + t * (scale.hi - scale.low()));
      rows += "<tr><td bgcolor=" + dot_string(scale.colour(v)) + " width=\"30\"></td><td align=\"left\">|g| " +
              (t == 0.0 && scale.lo < scale.low() ? "&lt;= " : "") + html(three_digits(v)) + "</td></tr>";
    }
  rows += "<tr><td><b>&#8212;</b></td><td align=\"left\">bold: the skip (identity) path into a residual add"
          "</td></tr>";
  rows += "<tr><td>- -</td><td align=\"left\">dashed: the branch, from the stream into the sublayer and back "
          "into the add</td></tr>";
  rows += "<tr><td bgcolor=\"#fff2b3\"></td><td align=\"left\">the residual stream; \"skip a | branch b\": the "
          "norms of the two parts of its gradient</td></tr>";
  rows += "<tr><td bgcolor=\"#bbbbbb\"></td><td align=\"left\">grey: no gradient kept (keep_contributions off, or "
          "none needed)</td></tr>";
  return "  legend [shape=plaintext, label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\">" + rows +
         "</table>>];\n";
}

}  // namespace

std::string to_dot(const Tape& tape, const DotOptions& options) {
  const int n = static_cast<int>(tape.size());
  if (tape.size() > options.max_entries)
    throw Error("to_dot: the tape has " + std::to_string(n) + " entries, more than DotOptions::max_entries = " +
                std::to_string(options.max_entries) + " (draw a smaller model)");
  const Residuals residuals = read_residuals(tape);
  ColourScale scale;
  const std::vector<Edge> edges = read_edges(tape, options, scale);

  // Nodes, each one line, grouped by scope.
  std::vector<std::string> nodes(static_cast<std::size_t>(n));
  std::map<std::string, ScopeTree> tree;
  tree[""];
  for (int i = 0; i < n; ++i) {
    if (!visible(tape, i, options)) continue;
    nodes[static_cast<std::size_t>(i)] = node_line(tape, i, residuals, options);
    add_to_tree(tree, i, tape.entry(i).scope);
  }

  std::string out = "digraph tape {\n";
  out += "  newrank=true; rankdir=TB; nodesep=0.25; ranksep=0.35;\n";
  out += "  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n";
  if (!options.title.empty()) out += "  labelloc=t; fontname=\"Helvetica\"; label=" + dot_string(options.title) + ";\n";
  int cluster = 0;
  write_scope(out, tree, "", nodes, 0, cluster, options.svg_ids);
  for (const Edge& e : edges) {
    const auto it = residuals.path.find({e.from, e.to});
    out += edge_line(e, it == residuals.path.end() ? EdgePath::plain : it->second, scale, options);
  }
  if (options.legend) out += legend(scale);
  out += "}\n";
  return out;
}

}  // namespace gs::explorer
