#include "engine/ops/shape.hpp"

#include <numeric>

#include <xtensor/xnoalias.hpp>
#include <xtensor/xview.hpp>

#include "engine/ops/axes.hpp"
#include "engine/tape.hpp"

namespace gs {

Var reshape(const Var& x, const std::vector<long>& shape, Site site) {
  const Shape from = x.shape(site);
  const std::size_t count = x.value().size();
  Shape to;
  std::size_t known = 1, inferred = shape.size();
  bool overflow = false;  // the product of the given dimensions does not fit a size_t
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && inferred == shape.size()) {
      inferred = i;
      to.push_back(1);
      continue;
    }
    if (shape[i] < 0) fail("reshape", site, "a dimension is negative (only one -1 is allowed)");
    to.push_back(static_cast<std::size_t>(shape[i]));
    overflow = __builtin_mul_overflow(known, to.back(), &known) || overflow;
  }
  // A wrapped product could match the element count by accident and hand xtensor a shape far larger
  // than the data: check it before anything else.
  if (overflow)
    fail("reshape", site, "cannot reshape " + shape_str(from) + " to " + shape_str(to) +
                              ": the dimensions' product overflows (more than 2^64 elements)");
  if (inferred != shape.size() && known != 0 && count % known == 0) to[inferred] = count / known;
  const std::size_t to_count = std::accumulate(to.begin(), to.end(), std::size_t{1}, std::multiplies<>());
  if (to_count != count)
    fail("reshape", site, "cannot reshape " + shape_str(from) + " (" + std::to_string(count) + " elements) to " +
                              shape_str(to));
  Array value = x.value();
  value.reshape(to);
  // y = x laid out as `to`: the gradient is laid out back as `from`.
  return x.tape(site).record("reshape", {x}, std::move(value), [from](const BackwardArgs& g) -> Grads {
    Array dx = g.grad;
    dx.reshape(from);
    return {std::move(dx)};
  }, site);
}

namespace {

// The view x[..., start:stop, ...] along axis `axis`. Write into it through xt::noalias: in xtensor
// 0.24 a plain `strided_view = expr` silently writes nothing.
template <class A>
auto axis_view(A& x, std::size_t axis, std::size_t start, std::size_t stop) {
  xt::xstrided_slice_vector sv(x.dimension(), xt::all());
  sv[axis] = xt::range(start, stop);
  return xt::strided_view(x, sv);
}

}  // namespace

Var slice(const Var& x, int axis, std::size_t start, std::size_t stop, Site site) {
  const Shape from = x.shape(site);
  const std::size_t a = normalize_axis(axis, from, "slice", site);
  if (start > stop || stop > from[a])
    fail("slice", site, "range [" + std::to_string(start) + ", " + std::to_string(stop) + ") does not fit axis " +
                            std::to_string(axis) + " of " + shape_str(from));
  Array value = axis_view(x.value(), a, start, stop);
  // y = x[start:stop] along the axis: the gradient goes back into those positions, zeros elsewhere.
  return x.tape(site).record("slice", {x}, std::move(value), [from, a, start, stop](const BackwardArgs& g) -> Grads {
    Array dx = xt::zeros<Real>(from);
    xt::noalias(axis_view(dx, a, start, stop)) = g.grad;
    return {std::move(dx)};
  }, site);
}

Var concat(const std::vector<Var>& xs, int axis, Site site) {
  if (xs.empty()) fail("concat", site, "needs at least one input");
  const Shape first = xs[0].shape(site);
  const std::size_t a = normalize_axis(axis, first, "concat", site);
  std::vector<std::size_t> offsets{0};  // where each input starts along the axis
  for (const Var& x : xs) {
    const Shape s = x.shape(site);
    bool same = s.size() == first.size();
    for (std::size_t d = 0; same && d < s.size(); ++d) same = d == a || s[d] == first[d];
    if (!same) fail("concat", site, "shapes " + shape_str(first) + " and " + shape_str(s) + " differ off axis " +
                                        std::to_string(axis));
    offsets.push_back(offsets.back() + s[a]);
  }
  Shape out_shape = first;
  out_shape[a] = offsets.back();
  Array value = Array::from_shape(out_shape);
  for (std::size_t i = 0; i < xs.size(); ++i)
    xt::noalias(axis_view(value, a, offsets[i], offsets[i + 1])) = xs[i].value();
  // y = [x0, x1, ...] along the axis: each input's gradient is its own stretch of dL/dy.
  return xs[0].tape(site).record("concat", xs, std::move(value), [a, offsets](const BackwardArgs& g) -> Grads {
    Grads grads;
    for (std::size_t i = 0; i + 1 < offsets.size(); ++i)
      grads.push_back(g.needs(i) ? Array(axis_view(g.grad, a, offsets[i], offsets[i + 1])) : Array{});
    return grads;
  }, site);
}

std::vector<Var> split(const Var& x, int axis, const std::vector<std::size_t>& sizes, Site site) {
  const Shape s = x.shape(site);
  const std::size_t a = normalize_axis(axis, s, "split", site);
  const std::size_t total = std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
  if (total != s[a])
    fail("split", site, "sizes add up to " + std::to_string(total) + " but axis " + std::to_string(axis) + " of " +
                            shape_str(s) + " has " + std::to_string(s[a]));
  std::vector<Var> pieces;
  std::size_t start = 0;
  for (std::size_t size : sizes) {  // each piece is a slice: its own tape entry
    pieces.push_back(slice(x, axis, start, start + size, site));
    start += size;
  }
  return pieces;
}

Var gather_rows(const Var& table, const IndexArray& ids, Site site) {
  const Shape ts = table.shape(site);
  if (ts.empty()) fail("gather_rows", site, "the table must have at least 1 dimension, got a 0-d array");
  for (std::int64_t id : ids)
    if (id < 0 || static_cast<std::size_t>(id) >= ts[0])
      fail("gather_rows", site, "id " + std::to_string(id) + " is out of range for a table of shape " +
                                    shape_str(ts) + " (ids must be in [0, " + std::to_string(ts[0]) + "))");
  const std::size_t row = table.value().size() / std::max<std::size_t>(ts[0], 1);  // elements per row
  Shape out_shape = shape_of(ids);
  out_shape.insert(out_shape.end(), ts.begin() + 1, ts.end());
  Array value = Array::from_shape(out_shape);
  const Real* from = table.value().data();
  std::size_t i = 0;
  for (std::int64_t id : ids) std::copy_n(from + id * row, row, value.data() + (i++) * row);
  // out[i] = table[ids[i]]:  dL/dtable[v] = sum of dL/dout[i] over every i with ids[i] = v (scatter-add)
  return table.tape(site).record("gather_rows", {table}, std::move(value), [ids, ts, row](const BackwardArgs& g) -> Grads {
    Array dtable = xt::zeros<Real>(ts);
    std::size_t i = 0;
    for (std::int64_t id : ids) {
      const Real* src = g.grad.data() + (i++) * row;
      Real* dst = dtable.data() + id * row;
      for (std::size_t j = 0; j < row; ++j) dst[j] += src[j];
    }
    return {std::move(dtable)};
  }, site);
}

}  // namespace gs
