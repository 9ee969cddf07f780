// The gradient split by path length computed without the graded sweep and without the edge tags: the
// ordinary backward with some branches cut (nn::cut_gradient on the add's branch input), and
// inclusion-exclusion. Used by tests/test_analysis_paths.cpp and by exercise 15's check.
//
// Let the model have n = 2L branches and G(T) be the part of the gradient whose paths go through
// exactly the set T of branches. Cutting every branch outside S leaves the paths that stay inside S:
//   h(S) = sum_{T subset of S} G(T)
// Möbius inversion over the subsets gives G(T) = sum_{S subset of T} (-1)^{|T| - |S|} h(S), and summing
// over the T of size k (each S of size s lies in C(n - s, k - s) of them):
//   g_k = sum_{|T| = k} G(T) = sum_{|S| <= k} (-1)^{k - |S|} C(n - |S|, k - |S|) h(S)
#pragma once

#include <vector>

#include "engine/engine.hpp"
#include "nn/interventions.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::test {

// The add of branch i (2l: block l's attention, 2l + 1: its MLP) in the last forward, from the block traces.
inline Var branch_add(const nn::TransformerLM& model, std::size_t i) {
  const nn::BlockTrace& t = model.blocks[i / 2]->last;
  return i % 2 == 0 ? t.attn_sum : t.mlp_sum;
}

// The ordinary gradients of emb and of every parameter (in named_parameters order), with every branch
// whose bit is 0 in `kept` cut in the backward pass.
inline std::vector<Array> gradients_with_cuts(nn::TransformerLM& model, unsigned kept, const IndexArray& ids,
                                              const IndexArray& targets) {
  Tape tape;
  TapeScope scope(tape);
  model.zero_grad();
  const Var loss = model.loss(ids, targets);
  for (std::size_t i = 0; i < 2 * model.blocks.size(); ++i)
    if (!((kept >> i) & 1u)) nn::cut_gradient(branch_add(model, i), 1);
  loss.backward();
  std::vector<Array> out = {model.last.emb.grad()};
  for (const nn::NamedParameter& p : model.named_parameters()) out.push_back(p.parameter.grad());
  return out;
}

inline double binomial(std::size_t n, std::size_t k) {
  double c = 1.0;
  for (std::size_t j = 1; j <= k; ++j) c = c * static_cast<double>(n - k + j) / static_cast<double>(j);
  return c;
}

// g_k by inclusion-exclusion over h[S] = gradients_with_cuts(model, S, ...) for every subset S of the n
// branches: out[array][k], k = 0 .. n. 2^n backwards: a few layers at most.
inline std::vector<std::vector<Array>> brute_force_parts(const std::vector<std::vector<Array>>& h, std::size_t n) {
  std::vector<std::vector<Array>> out(h[0].size());
  for (std::size_t a = 0; a < h[0].size(); ++a)
    for (std::size_t k = 0; k <= n; ++k) {
      Array part = xt::zeros_like(h[0][a]);
      for (unsigned S = 0; S < (1u << n); ++S) {
        const auto s = static_cast<std::size_t>(__builtin_popcount(S));
        if (s > k) continue;
        part += ((k - s) % 2 == 0 ? 1.0 : -1.0) * binomial(n - s, k - s) * h[S][a];
      }
      out[a].push_back(part);
    }
  return out;
}

}  // namespace gs::test
