#include "experiments/common/stream_split.hpp"

#include <algorithm>
#include <cmath>

#include "engine/engine.hpp"

namespace gs::experiments {

PathSplit split_gradient(const Var& position, const std::vector<int>& identity_ops) {
  const Entry& e = position.entry();
  const std::string where = "split_gradient: tape index " + std::to_string(position.index()) +
                            (e.label.empty() ? std::string() : " (" + e.label + ")");
  if (!e.has_grad) throw Error(where + " has no gradient: run backward first, from a root that depends on it");
  // engine/tools/inspect.hpp: what each op sent into this gradient; throws if keep_contributions was off.
  const std::vector<ContributionInfo> parts = contributions(position);
  if (parts.empty()) throw Error(where + " is the root of backward: no op sent it a gradient");
  PathSplit s;
  s.total = e.grad;
  s.identity = xt::zeros_like(e.value);
  s.branch = xt::zeros_like(e.value);
  std::vector<bool> seen(identity_ops.size(), false);
  for (const ContributionInfo& c : parts) {
    const auto it = std::find(identity_ops.begin(), identity_ops.end(), c.from);
    if (it != identity_ops.end()) {
      s.identity += c.grad;
      ++s.identity_parts;
      seen[static_cast<std::size_t>(it - identity_ops.begin())] = true;
    } else {
      s.branch += c.grad;
      ++s.branch_parts;
    }
  }
  for (std::size_t i = 0; i < identity_ops.size(); ++i)
    if (!seen[i])
      throw Error(where + ": the identity op at tape index " + std::to_string(identity_ops[i]) +
                  " sent it no gradient (is it a consumer of this entry?)");
  return s;
}

std::vector<StreamPosition> stream_positions(const nn::TransformerLM& model) {
  // The op through which a sublayer reads its input on the skip path: deepnorm's alpha * x is an op
  // of its own; otherwise the skip is the input itself and the add (sum) reads it.
  auto skip_op = [](const Var& input, const Var& skip, const Var& sum) {
    return skip.index() != input.index() ? skip.index() : sum.index();
  };
  std::vector<StreamPosition> out;
  const std::size_t L = model.blocks.size();
  if (L == 0 || model.last.emb.index() < 0) throw Error("stream_positions: the model has no forward on the tape");
  out.push_back({"emb", model.last.emb, -1});
  for (std::size_t l = 0; l < L; ++l) {
    const nn::BlockTrace& t = model.blocks[l]->last;
    const std::string b = "blocks." + std::to_string(l) + ".";
    if (t.input.index() != out.back().value.index())
      throw Error("stream_positions: " + b + "input is not the previous stream position (a stale trace?)");
    out.back().identity_op = skip_op(t.input, t.attn_skip, t.attn_sum);
    out.push_back({b + "mid", t.mid, skip_op(t.mid, t.mlp_skip, t.mlp_sum)});
    out.push_back({b + "out", t.output, -1});
  }
  return out;
}

namespace {

// Calls f(sum of squares) for every position, i.e. every row of the last axis.
template <class F>
void for_each_row(const Array& x, F f) {
  if (x.dimension() == 0 || x.shape().back() == 0) throw Error("stream norms: need an array of shape (..., C), C > 0");
  const std::size_t C = x.shape().back(), rows = x.size() / C;
  const double* p = x.data();
  for (std::size_t r = 0; r < rows; ++r) {
    double ss = 0.0;
    for (std::size_t c = 0; c < C; ++c) ss += p[r * C + c] * p[r * C + c];
    f(ss, C);
  }
}

}  // namespace

double mean_rms(const Array& x) {
  double total = 0.0;
  std::size_t rows = 0;
  for_each_row(x, [&](double ss, std::size_t C) {
    total += std::sqrt(ss / static_cast<double>(C));
    ++rows;
  });
  return total / static_cast<double>(rows);
}

double mean_l2(const Array& x) {
  double total = 0.0;
  std::size_t rows = 0;
  for_each_row(x, [&](double ss, std::size_t) {
    total += std::sqrt(ss);
    ++rows;
  });
  return total / static_cast<double>(rows);
}

double max_abs_diff(const Array& a, const Array& b) {
  if (shape_of(a) != shape_of(b))
    throw Error("max_abs_diff: shapes " + shape_str(shape_of(a)) + " and " + shape_str(shape_of(b)) + " differ");
  return a.size() == 0 ? 0.0 : xt::amax(xt::abs(a - b))();
}

}  // namespace gs::experiments
