#include "nn/norm.hpp"

#include "engine/engine.hpp"
#include "nn/dyt.hpp"
#include "nn/layernorm.hpp"
#include "nn/rmsnorm.hpp"

namespace gs::nn {

std::unique_ptr<NormLayer> make_norm(Norm norm, std::size_t d, double dyt_alpha) {
  switch (norm) {
    case Norm::layer: return std::make_unique<LayerNorm>(d);
    case Norm::rms: return std::make_unique<RMSNorm>(d);
    case Norm::dyt: return std::make_unique<DyT>(d, dyt_alpha);
    case Norm::none: return nullptr;
  }
  return nullptr;
}

Var scale_gradient(const Var& x, Array scale, Site site) {
  // y = x;  dL/dx = scale * dL/dy  (the tape sums nothing back: scale broadcasts against x's shape)
  return x.tape(site).record("scale_gradient", {x}, Array(x.value()), [scale = std::move(scale)](const BackwardArgs& g)
                                                                           -> Grads { return {g.grad * scale}; },
                             site);
}

}  // namespace gs::nn
