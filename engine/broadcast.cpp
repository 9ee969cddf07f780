#include "engine/broadcast.hpp"

#include <algorithm>

#include <xtensor/xmath.hpp>
#include "engine/ops/keepdims.hpp"

namespace gs {

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op, const Site& site) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {  // i counts from the right
    const std::size_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::size_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      fail(op, site, "cannot broadcast shapes " + shape_str(a) + " and " + shape_str(b));
    out[n - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

Array sum_to_shape(Array grad, std::span<const std::size_t> to, std::string_view op, const Site& site) {
  if (std::ranges::equal(grad.shape(), to)) return grad;  // nothing was broadcast: no Shape is built
  const Shape from = shape_of(grad), shape(to.begin(), to.end());
  const std::size_t lead = from.size() >= shape.size() ? from.size() - shape.size() : 0;
  bool ok = from.size() >= shape.size();
  std::vector<std::size_t> axes;  // the axes of grad to sum over
  for (std::size_t i = 0; ok && i < from.size(); ++i) {
    if (i < lead) {
      axes.push_back(i);
    } else if (shape[i - lead] == 1 && from[i] != 1) {
      axes.push_back(i);
    } else if (shape[i - lead] != from[i]) {
      ok = false;
    }
  }
  if (!ok)
    fail(op, site, "backward produced a gradient of shape " + shape_str(from) +
                       " that does not broadcast from the input's shape " + shape_str(shape));
  // The common case, a bias (D,) or (1, D) added to (B, T, D): the summed axes are the leading ones,
  // so the gradient is `rows` consecutive rows of `inner` numbers, summed row by row into one.
  const bool leading = axes.empty() || axes.back() + 1 == axes.size();
  if (leading) {
    Array summed = xt::zeros<Real>(shape);
    const std::size_t inner = summed.size(), rows = inner == 0 ? 0 : grad.size() / inner;
    Real* out = summed.data();
    for (std::size_t r = 0; r < rows; ++r) {
      const Real* row = grad.data() + r * inner;
      for (std::size_t j = 0; j < inner; ++j) out[j] += row[j];
    }
    return summed;
  }
  Array summed = sum_keepdims(grad, axes);
  summed.reshape(shape);  // drops the leading axes that broadcasting added
  return summed;
}

}  // namespace gs
