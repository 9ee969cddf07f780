// The reference solution of exercise 15 (docs/coursework.md#ex15).
#include "../ex15_graded_sweep.hpp"

#include <algorithm>
#include <optional>

#include "engine/broadcast.hpp"

namespace gs::coursework {

std::vector<std::vector<Array>> graded_sweep(const Tape& tape, int root, const std::vector<TapeEdge>& marked,
                                             std::size_t K, const std::vector<int>& wanted) {
  const std::size_t n = tape.size();
  std::vector<std::vector<std::optional<Array>>> grads(n);  // grads[i][j]: coefficient j of entry i, if any arrived
  auto add = [&](int i, std::size_t j, Array part) {
    std::vector<std::optional<Array>>& g = grads[static_cast<std::size_t>(i)];
    if (g.empty()) g.resize(K + 1);
    if (g[j]) *g[j] += part;
    else g[j] = std::move(part);
  };
  add(root, 0, xt::ones_like(tape.entry(root).value));
  for (int i = root; i >= 0; --i) {
    const Entry& e = tape.entry(i);
    if (grads[static_cast<std::size_t>(i)].empty() || !e.backward) continue;
    std::vector<const Array*> values;
    std::vector<bool> needs;
    for (int in : e.inputs) {
      values.push_back(&tape.entry(in).value);
      needs.push_back(tape.entry(in).requires_grad);
    }
    for (std::size_t j = 0; j <= K; ++j) {
      const std::optional<Array>& gj = grads[static_cast<std::size_t>(i)][j];
      if (!gj) continue;
      Grads parts = e.backward(BackwardArgs{*gj, e.value, values, needs});
      for (std::size_t k = 0; k < parts.size(); ++k) {
        if (!needs[k]) continue;
        const bool up = std::find(marked.begin(), marked.end(), TapeEdge{i, k}) != marked.end();
        add(e.inputs[k], up ? std::min(j + 1, K) : j, sum_to_shape(std::move(parts[k]), values[k]->shape(), e.op, e.site));
      }
    }
  }
  std::vector<std::vector<Array>> out;
  for (int w : wanted) {
    std::vector<Array> coef;
    for (std::size_t j = 0; j <= K; ++j) {
      const std::vector<std::optional<Array>>& g = grads[static_cast<std::size_t>(w)];
      coef.push_back(!g.empty() && g[j] ? *g[j] : Array(xt::zeros_like(tape.entry(w).value)));
    }
    out.push_back(std::move(coef));
  }
  return out;
}

}  // namespace gs::coursework
