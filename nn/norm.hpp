// What every norm of a residual block is: LayerNorm (nn/layernorm.hpp), RMSNorm (nn/rmsnorm.hpp) or
// Dynamic Tanh (nn/dyt.hpp), chosen by ModelConfig::norm (each kind's row: nn/kinds.cpp). A block holds its norms as NormLayer
// pointers, null where the placement has no norm or the norm is `none` (the identity).
#pragma once

#include <cstddef>
#include <memory>

#include "engine/var.hpp"
#include "nn/config.hpp"
#include "nn/module.hpp"

namespace gs::nn {

// How a norm's backward treats its input x: the true gradient by default; the interventions
// (nn/interventions.hpp, docs/placements.md) change it, never the forward value.
//   undo_gain     dx is multiplied by sigma = sqrt(var + eps) (LayerNorm) or rms (RMSNorm) of x, per
//                 position: the norm's 1/sigma factor removed, the direction unchanged
//   detach_stats  the statistics (LayerNorm's mean and variance, RMSNorm's mean square) are constants
//                 of the backward pass: dx = w * g / sigma
struct NormGrad {
  bool undo_gain = false;
  bool detach_stats = false;
  bool changed() const { return undo_gain || detach_stats; }
};

class NormLayer : public Module {
 public:
  explicit NormLayer(std::size_t d, bool fused_op = true) : dim(d), fused(fused_op) {}
  virtual Var forward(const Var& x, Site site = Site::current()) const = 0;  // (..., d) -> (..., d)

  std::size_t dim;
  bool fused;          // the fused op (one tape entry, backward by hand) or the composite (engine ops)
  NormGrad backward_mode;  // how the backward treats x (interventions); default: the true gradient
};

// The norm of kind `norm` over d features (weights ones, biases zeros, DyT's alpha = dyt_alpha);
// nullptr for Norm::none. What kind_of(norm).make makes.
std::unique_ptr<NormLayer> make_norm(Norm norm, std::size_t d, double dyt_alpha);

// An identity whose backward multiplies the gradient by `scale` (broadcast against x, e.g. (..., 1)
// per position): y = x, dL/dx = scale * dL/dy. The composite norms put it in front of themselves for
// NormGrad::undo_gain. One tape entry, "scale_gradient".
Var scale_gradient(const Var& x, Array scale, Site site = Site::current());

}  // namespace gs::nn
