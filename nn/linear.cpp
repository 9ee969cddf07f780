#include "nn/linear.hpp"

#include "engine/engine.hpp"

namespace gs::nn {

Var linear(const Var& x, const Var& weight, const Var& bias, Site site) {
  const Shape xs = x.shape(site), ws = weight.shape(site), bs = bias.shape(site);
  if (ws.size() != 2 || bs.size() != 1 || bs[0] != ws[1])
    fail("linear", site, "needs weight (in, out) and bias (out,), got weight " + shape_str(ws) + " and bias " +
                             shape_str(bs));
  if (xs.empty() || xs.back() != ws[0])
    fail("linear", site, "x " + shape_str(xs) + " does not end in in_features = " + std::to_string(ws[0]) +
                             " of weight " + shape_str(ws));
  const long in = static_cast<long>(ws[0]), out = static_cast<long>(ws[1]);
  if (xs.size() == 2) return matmul(x, weight) + bias;  // (N, in) @ (in, out) + (out,) -> (N, out)

  // (..., in) -> (rows, in): one gemm for every position of every sequence.
  Var rows = reshape(x, {-1, in});     // (rows, in)
  Var y = matmul(rows, weight) + bias;  // (rows, out)
  std::vector<long> out_shape(xs.begin(), xs.end() - 1);
  out_shape.push_back(out);
  return reshape(y, out_shape);         // (..., out)
}

Linear::Linear(std::size_t in, std::size_t out, Initializer& init) : in_features(in), out_features(out) {
  weight = add_parameter("weight", init.linear_weight(in, out));  // [in, out]
  bias = add_parameter("bias", zeros({out}));                     // [out]
}

Var Linear::forward(const Var& x, Site site) const {
  // y = x @ W + b
  return linear(x, weight, bias, site);
}

}  // namespace gs::nn
