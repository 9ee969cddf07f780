#include "nn/residual_edges.hpp"

#include <algorithm>

#include "engine/tape.hpp"
#include "engine/tools/inspect.hpp"

namespace gs::nn {

const char* edge_tag_name(EdgeTag tag) {
  if (tag == EdgeTag{}) return "none";
  if (tag == skip_edge) return "skip";
  if (tag == branch_out_edge) return "branch-out";
  return "?";
}

namespace {

// The ops that read entry s through an edge tagged skip_edge, in tape order (each once).
std::vector<int> skip_readers_of(const Tape& tape, int s) {
  std::vector<int> out;
  for (int j = s + 1; j < static_cast<int>(tape.size()); ++j)
    for (std::size_t k = 0; k < tape.entry(j).inputs.size(); ++k)
      if (tape.entry(j).inputs[k] == s && tape.tag(j, k) == skip_edge &&
          (out.empty() || out.back() != j))
        out.push_back(j);
  return out;
}

// s's contributions summed by the path they came back along.
SkipBranch sum_by_path(const Tape& tape, int s) {
  const Entry& e = tape.entry(s);
  const std::vector<int> skip_readers = skip_readers_of(tape, s);
  SkipBranch out{xt::zeros_like(e.value), xt::zeros_like(e.value), 0, 0};
  for (const Contribution& c : e.contributions) {
    if (std::find(skip_readers.begin(), skip_readers.end(), c.from) != skip_readers.end()) {
      out.skip += c.grad;
      ++out.skip_parts;
    } else {
      out.branch += c.grad;
      ++out.branch_parts;
    }
  }
  return out;
}

}  // namespace

SkipBranch split_skip_branch(const Var& v, Site site) {
  const std::vector<ContributionInfo> parts = contributions(v, site);  // throws without a gradient or a record
  const Tape& tape = v.tape(site);
  if (skip_readers_of(tape, v.index()).empty())
    fail("split_skip_branch", site, "tape index " + std::to_string(v.index()) + " (op " + v.entry(site).op +
                                        ") is read through no edge tagged skip_edge: it is not where a "
                                        "residual connection forks");
  return sum_by_path(tape, v.index());
}

SkipBranch split_skip_branch(const Tape& tape, int s) { return sum_by_path(tape, s); }

bool is_stream_fork(const Tape& tape, int s) {
  bool skip = false, other = false;
  for (std::size_t j = static_cast<std::size_t>(s) + 1; j < tape.size(); ++j) {
    const Entry& e = tape.entry(static_cast<int>(j));
    for (std::size_t k = 0; k < e.inputs.size(); ++k)
      if (e.inputs[k] == s) (tape.tag(static_cast<int>(j), k) == skip_edge ? skip : other) = true;
  }
  return skip && other;
}

const char* to_string(EdgePath path) {
  switch (path) {
    case EdgePath::plain: return "plain";
    case EdgePath::skip: return "skip";
    case EdgePath::branch_in: return "branch-in";
    case EdgePath::branch_out: return "branch-out";
  }
  return "?";
}

std::vector<std::vector<EdgePath>> edge_paths(const Tape& tape) {
  const int n = static_cast<int>(tape.size());
  std::vector<bool> fork(static_cast<std::size_t>(n), false), skip_read(fork), other_read(fork);
  for (int j = 0; j < n; ++j)
    for (std::size_t k = 0; k < tape.entry(j).inputs.size(); ++k) {
      const auto in = static_cast<std::size_t>(tape.entry(j).inputs[k]);
      if (tape.tag(j, k) == skip_edge) skip_read[in] = true;
      else other_read[in] = true;
    }
  for (std::size_t s = 0; s < fork.size(); ++s) fork[s] = skip_read[s] && other_read[s];  // is_stream_fork
  std::vector<std::vector<EdgePath>> paths(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) {
    const Entry& e = tape.entry(j);
    for (std::size_t k = 0; k < e.inputs.size(); ++k) {
      const EdgeTag t = tape.tag(j, k);
      paths[static_cast<std::size_t>(j)].push_back(
          t == skip_edge                                ? EdgePath::skip
          : fork[static_cast<std::size_t>(e.inputs[k])] ? EdgePath::branch_in
          : t == branch_out_edge                        ? EdgePath::branch_out
                                                        : EdgePath::plain);
    }
  }
  return paths;
}

}  // namespace gs::nn
