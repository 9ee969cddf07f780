// Gradient checking: the engine's gradients against central finite differences,
//   dL/dx_i ~ (L(x + h e_i) - L(x - h e_i)) / (2h),   error O(h^2), h = 1e-6 in double precision.
// A non-scalar output y is checked through L = sum(y * w) with fixed random weights w, so that every
// element of y (every row of the Jacobian) counts.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/array.hpp"
#include "engine/var.hpp"

namespace gs {

struct GradcheckOptions {
  double step = 1e-6;            // h
  double abs_tolerance = 1e-6;   // an element passes if |analytic - numeric| <= abs + rel * |numeric|
  double rel_tolerance = 1e-5;
  unsigned seed = 0;             // for the weights w of a non-scalar output
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0.0;    // worst |analytic - numeric| over every element of every input
  double max_rel_error = 0.0;    // worst |analytic - numeric| / max(|analytic|, |numeric|, 1e-12)
  std::size_t worst_input = 0;   // where the worst absolute error is: which input,
  std::size_t worst_index = 0;   //   which flat element of it,
  double analytic = 0.0;         //   and both derivatives there
  double numeric = 0.0;
  std::string report;            // one readable paragraph saying all of the above
};

// f maps leaves (one per input, in order, requiring gradients) to an output. f is run on a fresh tape
// of the checker's own, 2 + 2 * (number of input elements) times: once to see the output's shape,
// once for the analytic gradient, and twice per input element for the finite differences.
using CheckedFunction = std::function<Var(const std::vector<Var>&)>;
GradcheckResult gradcheck(const CheckedFunction& f, const std::vector<Array>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace gs
