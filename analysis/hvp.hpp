// Hessian-vector products by central differences of the engine's own gradients:
//
//   H v ~ (g(theta + h v) - g(theta - h v)) / (2h),    g = dL/dtheta,
//
// for the Hessian H of a scalar loss L with respect to a set of parameters theta. Two gradients per
// product, and no op needs a second derivative. With a subset of the model's parameters, H is the
// principal submatrix of the full Hessian on those coordinates (the others stay where they are).
// The step h and the error it gives are derived in docs/curvature.md:
//
//   h = cbrt(eps) * max(|theta|, 1) / |v|,   eps = 2^-52,
//
// which balances the truncation error (h^2 / 6) |D^4 L[v, v, v]| against the rounding error
// ~ eps |g| / h, for a loss whose derivatives change on the length scale |theta|.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "engine/array.hpp"
#include "engine/parameter.hpp"
#include "engine/tape.hpp"

namespace gs::analysis {

// Builds the loss (a scalar) on the current tape from the parameters' current values, e.g.
//   [&] { return model.loss(batch.ids, batch.targets); }
// It must compute the same function every time it is called (a fixed batch, no randomness).
using LossFunction = std::function<Var()>;

struct HvpOptions {
  double step = 0.0;  // h; 0 chooses it as above from |theta| and |v|
};

// The step h that hvp uses for direction v at the parameters' current values (options.step if set).
double hvp_step(const std::vector<Parameter>& parameters, const std::vector<Array>& v, const HvpOptions& options = {});

// H v and the gradient for one loss and one set of parameters. Construct it once and apply it many
// times (Lanczos does): it keeps one tape of its own, which its gradients are recorded on.
// Every call leaves the parameters' values as it found them, bit for bit, and never touches any
// parameter's grad(): its gradients are read off the leaves of its own tape
// (Tape::accumulate_into_parameters is off there). The values are moved to theta +- h v in place,
// so no other thread may use these parameters during a call.
class HessianVectorProduct {
 public:
  HessianVectorProduct(LossFunction loss, std::vector<Parameter> parameters, HvpOptions options = {});

  // H v: one array per parameter, each of its parameter's shape.
  std::vector<Array> operator()(const std::vector<Array>& v);
  // dL/dtheta at the current values, one array per parameter; loss_value (if given) gets L.
  std::vector<Array> gradient(double* loss_value = nullptr);

  const std::vector<Parameter>& parameters() const { return parameters_; }
  std::size_t size() const;                              // the number of scalars in theta
  std::size_t gradients() const { return gradients_; }   // gradients computed so far (2 per product)
  double last_step() const { return last_step_; }        // the h of the last product

 private:
  std::vector<Array> gradient_at_current(double* loss_value);
  LossFunction loss_;
  std::vector<Parameter> parameters_;
  HvpOptions options_;
  Tape tape_;
  std::size_t gradients_ = 0;
  double last_step_ = 0.0;
};

// One product: HessianVectorProduct(loss, parameters, options)(v).
std::vector<Array> hvp(const LossFunction& loss, const std::vector<Parameter>& parameters,
                       const std::vector<Array>& v, const HvpOptions& options = {});

// Per-parameter arrays <-> one flat vector (parameters in order, each row-major), for Lanczos.
Array join_flat(const std::vector<Array>& parts);
std::vector<Array> split_flat(const Array& flat, const std::vector<Parameter>& like);

}  // namespace gs::analysis
