// Reference solution of exercise 11 (docs/coursework.md#ex11).
#include "../ex11_skip_branch.hpp"
#include "nn/residual_edges.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <xtensor/xbuilder.hpp>

namespace gs::coursework {

SkipBranchParts skip_branch_split(const Tape& tape, int s) {
  const Entry& e = tape.entry(s);
  if (!e.has_grad || (e.contributions.empty() && !tape.keep_contributions))
    fail("skip_branch_split", Site::current(),
         "tape index " + std::to_string(s) + " has no gradient, or the tape kept no contributions");
  std::vector<int> skip_readers;  // the entries that read s along a skip edge
  for (int j = s + 1; j < static_cast<int>(tape.size()); ++j)
    for (std::size_t k = 0; k < tape.entry(j).inputs.size(); ++k)
      if (tape.entry(j).inputs[k] == s && tape.tag(j, k) == nn::skip_edge) skip_readers.push_back(j);
  SkipBranchParts parts{xt::zeros_like(e.value), xt::zeros_like(e.value)};
  for (const Contribution& c : e.contributions) {
    const bool skip = std::find(skip_readers.begin(), skip_readers.end(), c.from) != skip_readers.end();
    (skip ? parts.skip : parts.branch) += c.grad;
  }
  return parts;
}

}  // namespace gs::coursework
