#include "analysis/stream_split.hpp"

#include <algorithm>
#include <cmath>

#include "engine/tape.hpp"
#include "engine/var.hpp"

namespace gs::analysis {

std::vector<StreamPosition> stream_positions(const nn::TransformerLM& model) {
  std::vector<StreamPosition> out;
  const std::size_t L = model.blocks.size();
  if (L == 0 || model.last.emb.index() < 0) throw Error("stream_positions: the model has no forward on the tape");
  out.push_back({"emb", model.last.emb, false});
  for (std::size_t l = 0; l < L; ++l) {
    const nn::BlockTrace& t = model.blocks[l]->last;
    const std::string b = "blocks." + std::to_string(l) + ".";
    if (t.input.index() != out.back().value.index())
      throw Error("stream_positions: " + b + "input is not the previous stream position (a stale trace?)");
    out.push_back({b + "mid", t.mid, false});
    out.push_back({b + "out", t.out, l + 1 == L});
  }
  return out;
}

namespace {

// Calls f(sum of squares) for every position, i.e. every row of the last axis.
template <class F>
void for_each_row(const Array& x, F f) {
  if (x.dimension() == 0 || x.shape().back() == 0) throw Error("stream norms: need an array of shape (..., C), C > 0");
  const std::size_t C = x.shape().back(), rows = x.size() / C;
  const Real* p = x.data();
  for (std::size_t r = 0; r < rows; ++r) {
    double ss = 0.0;
    for (std::size_t c = 0; c < C; ++c) ss += p[r * C + c] * p[r * C + c];
    f(ss, C);
  }
}

}  // namespace

double rms(const Array& x) { return norm(x) / std::sqrt(static_cast<double>(std::max<std::size_t>(1, x.size()))); }

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

}  // namespace gs::analysis
