#include "nn/mlp.hpp"

#include "engine/engine.hpp"

namespace gs::nn {

MLP::MLP(std::size_t d, std::size_t d_ff, Initializer& init) : fc1(d, d_ff, init), fc2(d_ff, d, init) {
  add_child("fc1", fc1);
  add_child("fc2", fc2);
}

Var MLP::forward(const Var& x, Site site) const {
  Var hidden = fc1.forward(x, site);  // (..., d_ff) = x W1 + b1
  Var act = gelu(hidden);             // (..., d_ff) = hidden * Phi(hidden)
  return fc2.forward(act, site);      // (..., d)    = act W2 + b2
}

}  // namespace gs::nn
