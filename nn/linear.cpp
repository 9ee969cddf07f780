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

// ---- the fused op's arithmetic ----

Array linear_forward(const Array& x, const Array& weight, const Array& bias) {
  const std::size_t in = weight.shape()[0], out = weight.shape()[1];
  const std::size_t rows = in == 0 ? 0 : x.size() / in;  // every leading position is a row
  Shape out_shape = shape_of(x);
  out_shape.back() = out;
  // Y = X W + b with X (rows, in), W (in, out): every row of Y starts as b, then one gemm adds X W.
  Array y = Array::from_shape(out_shape);  // (..., out)
  for (std::size_t r = 0; r < rows; ++r) std::copy_n(bias.data(), out, y.data() + r * out);
  if (rows > 0 && in > 0 && out > 0)
    gemm(false, false, rows, out, in, 1.0, x.data(), in, weight.data(), out, 1.0, y.data(), out);
  return y;
}

Grads linear_backward(const Array& grad, const Array& x, const Array& weight, const std::vector<bool>& needs) {
  const std::size_t in = weight.shape()[0], out = weight.shape()[1];
  const std::size_t rows = in == 0 ? 0 : x.size() / in;
  const Real* G = grad.data();  // (rows, out)
  Array dx, dw, db;
  if (needs[0]) {  // dX = G W^T  (..., in)
    dx = Array::from_shape(shape_of(x));
    if (out == 0) dx.fill(0.0);
    else if (rows > 0 && in > 0)
      gemm(false, true, rows, in, out, 1.0, G, out, weight.data(), out, 0.0, dx.data(), in);
  }
  if (needs[1]) {  // dW = X^T G  (in, out)
    dw = Array::from_shape({in, out});
    if (rows == 0) dw.fill(0.0);  // otherwise the gemm (beta = 0) writes every element
    else if (in > 0 && out > 0)
      gemm(true, false, in, out, rows, 1.0, x.data(), in, G, out, 0.0, dw.data(), out);
  }
  if (needs[2]) {  // db = sum over rows of G  (out,)
    db = xt::zeros<Real>({out});
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < out; ++j) db.data()[j] += G[r * out + j];
  }
  return {std::move(dx), std::move(dw), std::move(db)};
}

// ---- the two forms on Vars ----

Var linear_composite(const Var& x, const Var& weight, const Var& bias, Site site) {
  const Shape xs = x.shape(site), ws = weight.shape(site);
  check_linear_shapes("linear_composite", xs, ws, bias.shape(site), site);
  // (..., in) @ (in, out) + (out,) -> (..., out): matmul runs it as one gemm over every leading position.
  if (xs.size() >= 2) return matmul(x, weight) + bias;
  // A single vector (in,): as a (1, in) row and back.
  Var y = matmul(reshape(x, {1, static_cast<long>(ws[0])}), weight) + bias;  // (1, out)
  return reshape(y, {static_cast<long>(ws[1])});                              // (out,)
}

Var linear_fused(const Var& x, const Var& weight, const Var& bias, Site site) {
  check_linear_shapes("linear_fused", x.shape(site), weight.shape(site), bias.shape(site), site);
  Array y = linear_forward(x.value(), weight.value(), bias.value());  // (..., out)
  return x.tape(site).record("linear_fused", {x, weight, bias}, std::move(y), [](const BackwardArgs& g) -> Grads {
    return linear_backward(g.grad, g.in(0), g.in(1), g.needs_grad);
  }, site);
}

// ---- the module ----

Linear::Linear(std::size_t in, std::size_t out, Initializer& init) : in_features(in), out_features(out) {
  weight = add_parameter("weight", init.linear_weight(in, out));  // [in, out]
  bias = add_parameter("bias", zeros({out}));                     // [out]
}

Var Linear::forward(const Var& x, Site site) const {
  // y = x @ W + b
  return linear_fused(x, weight, bias, site);
}

}  // namespace gs::nn
