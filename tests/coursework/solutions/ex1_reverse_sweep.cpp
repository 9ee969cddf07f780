// Reference solution of exercise 1 (docs/coursework.md#ex1).
#include "../ex1_reverse_sweep.hpp"

#include <xtensor/xbuilder.hpp>

#include "engine/broadcast.hpp"

namespace gs::coursework {

std::vector<Array> reverse_sweep(const Tape& tape, int root, const Array& seed) {
  const auto n = static_cast<std::size_t>(root + 1);
  std::vector<Array> g;  // g[i] = dL/d(value of entry i)
  for (std::size_t i = 0; i < n; ++i) g.push_back(xt::zeros_like(tape.entry(static_cast<int>(i)).value));
  std::vector<bool> reached(n, false);
  g[n - 1] = seed;
  reached[n - 1] = true;

  std::vector<const Array*> values;  // what BackwardArgs lists for entry i
  std::vector<bool> needs;
  for (int i = root; i >= 0; --i) {
    const Entry& e = tape.entry(i);
    if (!reached[static_cast<std::size_t>(i)] || !e.backward) continue;  // off every path, or a leaf
    values.clear();
    needs.clear();
    for (int in : e.inputs) {
      values.push_back(&tape.entry(in).value);
      needs.push_back(tape.entry(in).requires_grad);
    }
    const Grads grads = e.backward(BackwardArgs{g[static_cast<std::size_t>(i)], e.value, values, needs});
    for (std::size_t k = 0; k < e.inputs.size(); ++k) {
      if (!needs[k]) continue;
      const auto j = static_cast<std::size_t>(e.inputs[k]);
      g[j] += sum_to_shape(grads[k], tape.entry(e.inputs[k]).value.shape(), e.op, e.site);  // dL/dx_j += dL/dy dy/dx_j
      reached[j] = true;
    }
  }
  return g;
}

}  // namespace gs::coursework
