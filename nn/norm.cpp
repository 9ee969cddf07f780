#include "nn/norm.hpp"

#include "engine/engine.hpp"

namespace gs::nn {

std::unique_ptr<NormLayer> make_norm(Norm norm, std::size_t d, double dyt_alpha) {
  return kind_of(norm).make(d, dyt_alpha);  // the registry's row (nn/kinds.cpp)
}

Var scale_gradient(const Var& x, Array scale, Site site) {
  // y = x;  dL/dx = scale * dL/dy  (the tape sums nothing back: scale broadcasts against x's shape)
  return x.tape(site).record("scale_gradient", {x}, Array(x.value()), [scale = std::move(scale)](const BackwardArgs& g)
                                                                           -> Grads { return {g.grad * scale}; },
                             site);
}

}  // namespace gs::nn
