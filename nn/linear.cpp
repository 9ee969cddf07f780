#include "nn/linear.hpp"

#include <algorithm>

#include "engine/engine.hpp"

namespace gs::nn {
namespace {

// weight (in, out), bias (out,), x (..., in): throws naming the op, the shapes and the call site.
void check_linear_shapes(const char* op, const Shape& xs, const Shape& ws, const Shape& bs, const Site& site) {
  if (ws.size() != 2 || bs.size() != 1 || bs[0] != ws[1])
    fail(op, site, "needs weight (in, out) and bias (out,), got weight " + shape_str(ws) + " and bias " +
                       shape_str(bs));
  if (xs.empty() || xs.back() != ws[0])
    fail(op, site, "x " + shape_str(xs) + " does not end in in_features = " + std::to_string(ws[0]) + " of weight " +
                       shape_str(ws));
}

}  // namespace

Var linear_composite(const Var& x, const Var& weight, const Var& bias, Site site) {
  const Shape xs = x.shape(site), ws = weight.shape(site);
  check_linear_shapes("linear", xs, ws, bias.shape(site), site);
  // (..., in) @ (in, out) + (out,) -> (..., out): matmul runs it as one gemm over every leading position.
  if (xs.size() >= 2) return matmul(x, weight) + bias;
  // A single vector (in,): as a (1, in) row and back.
  Var y = matmul(reshape(x, {1, static_cast<long>(ws[0])}), weight) + bias;  // (1, out)
  return reshape(y, {static_cast<long>(ws[1])});                              // (out,)
}

Var linear(const Var& x, const Var& weight, const Var& bias, Site site) {
  const Shape xs = x.shape(site), ws = weight.shape(site);
  check_linear_shapes("linear", xs, ws, bias.shape(site), site);
  const std::size_t in = ws[0], out = ws[1];
  const std::size_t rows = in == 0 ? 0 : x.value().size() / in;  // every leading position is a row
  Shape out_shape = xs;
  out_shape.back() = out;

  // Y = X W + b with X (rows, in), W (in, out): every row of Y starts as b, then one gemm adds X W.
  Array y = Array::from_shape(out_shape);
  for (std::size_t r = 0; r < rows; ++r) std::copy_n(bias.value().data(), out, y.data() + r * out);
  if (rows > 0 && in > 0 && out > 0)
    gemm(false, false, rows, out, in, 1.0, x.value().data(), in, weight.value().data(), out, 1.0, y.data(), out);

  // Backward, with G = dL/dY (rows, out):  dX = G W^T,  dW = X^T G,  db = sum over rows of G.
  return x.tape(site).record("linear", {x, weight, bias}, std::move(y),
                             [rows, in, out](const BackwardArgs& g) -> Grads {
    const double* G = g.grad.data();
    Array dx, dw, db;
    if (g.needs(0)) {
      dx = Array::from_shape(shape_of(g.in(0)));
      if (out == 0) dx.fill(0.0);
      else if (rows > 0 && in > 0)
        gemm(false, true, rows, in, out, 1.0, G, out, g.in(1).data(), out, 0.0, dx.data(), in);
    }
    if (g.needs(1)) {
      dw = Array::from_shape({in, out});
      if (rows == 0) dw.fill(0.0);  // otherwise the gemm (beta = 0) writes every element
      else if (in > 0 && out > 0)
        gemm(true, false, in, out, rows, 1.0, g.in(0).data(), in, G, out, 0.0, dw.data(), out);
    }
    if (g.needs(2)) {
      db = xt::zeros<double>({out});
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t j = 0; j < out; ++j) db.data()[j] += G[r * out + j];
    }
    return {std::move(dx), std::move(dw), std::move(db)};
  }, site);
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
