// The tape drawn as a Graphviz DOT graph, for --graph and the explorer page: every edge labelled with
// the gradient that flowed back along it (engine/tools/inspect.hpp reads those off the tape).
#pragma once

#include <cstddef>
#include <string>

#include "engine/tape.hpp"

namespace gs::explorer {

// How to_dot() draws a tape.
struct DotOptions {
  std::string title;           // shown at the top ("" for none)
  bool show_constants = true;  // draw "const" leaves (inputs, targets, masks)
  bool legend = true;          // a box explaining colours and line styles
  std::size_t max_entries = 5000;  // throws above this: dot would take minutes and the picture is unreadable
  // Names every node, edge and cluster for a program that reads the SVG (the explorer page); off, the
  // DOT text is unchanged. Graphviz copies id and class onto the SVG's <g> elements:
  //   node  id="n<i>" (tape index i);  edge  id="e<j>_<k>" (input number k of entry j), class "skip",
  //   "branch-in", "branch-out" or "plain" (nn::to_string(EdgePath));  cluster  id="cluster:<scope>" (the full dotted scope).
  bool svg_ids = false;
};

// The tape as a Graphviz DOT graph (render with `dot -Tsvg graph.dot -o graph.svg`):
//  - node "n<i>" per entry i: tape index, op, label, shape and |grad|; parameters are boxes, leaves
//    and constants ellipses, ops rounded boxes;
//  - edge input -> op per input, labelled with the norm of the gradient that op sent back into that
//    input and coloured by it on a log scale (blue small, violet, red large); grey and unlabelled where no
//    gradient was kept (keep_contributions off, or the input needs none);
//  - entries grouped by Entry::scope: one cluster per module ("blocks.3"), nested clusters for its
//    children ("blocks.3.attn");
//  - residual connections y = s + f(s), as the blocks tagged them (nn/residual_edges.hpp): skip edges are bold and
//    labelled "skip |g|"; at a stream position s (read through a skip edge and by other ops) the edges
//    into the branch's first ops are dashed and labelled "branch |g|", the branch's edge into the add
//    dashed, and s's node shows "skip a | branch b", the norms of the two parts of its gradient
//    (split_skip_branch), so that they are compared at a glance.
std::string to_dot(const Tape& tape, const DotOptions& options = {});

}  // namespace gs::explorer
