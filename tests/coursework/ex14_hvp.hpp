// Exercise 14 (docs/coursework.md#ex14): a Hessian-vector product by central differences of gradients.
// The Hessian H of a scalar loss L(theta) is the matrix of second derivatives; the curvature along a
// direction v is v^T H v. H has n^2 entries for n parameters, but H v needs only two gradients:
//   H v = d/dh g(theta + h v) at h = 0  ~  (g(theta + h v) - g(theta - h v)) / (2h),    g = dL/dtheta
// The error: truncation ~ h^2 |third derivatives| / 6, rounding ~ 1e-16 |g| / h. With the step
//   h = cbrt(2^-52) * max(|theta|, 1) / |v|     (|.| the Euclidean norm over all the parameters)
// both stay small (analysis/hvp.hpp explains it). docs/pre-vs-post-ln.md section 9 measures Post-LN's
// and Pre-LN's sharpness, the largest eigenvalue of H, with products like this one.
// Module 4, the question. Difficulty: 2/3. Time: about 40 min.
#pragma once

#include <vector>

#include "engine/array.hpp"
#include "engine/parameter.hpp"
#include "analysis/hvp.hpp"

namespace gs::coursework {

// H v for the loss `loss` (it builds the loss on Tape::current() from the parameters' current values)
// w.r.t. `parameters`, with v one array per parameter, in its shape; the result likewise. Uses the step
// h above. Leaves every parameter's value as it found it, bit for bit (its grad() may change).
// Do not use gs::analysis::hvp or gs::analysis::hvp_step: this exercise is writing them.
std::vector<Array> hessian_vector_product(const analysis::LossFunction& loss, std::vector<Parameter> parameters,
                                          const std::vector<Array>& v);

}  // namespace gs::coursework
