// Gradient checking: the engine's gradients against central finite differences,
//   dL/dx_i ~ (L(x + h e_i) - L(x - h e_i)) / (2h),   error O(h^2), h = 1e-6 in double precision.
// In a float32 build (gs::Real = float) L carries only ~7 digits, so the step is 2^-10 (a power of two:
// x +- h is then exact for |x| < 2^13), the rule has four points (central_difference below) and the
// tolerances are 1e-2: a coarse check, which the float64 build's tight one backs.
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
  double step = float32_build ? 0x1p-10 : 1e-6;           // h
  double abs_tolerance = float32_build ? 1e-2 : 1e-6;     // an element passes if
  double rel_tolerance = float32_build ? 1e-2 : 1e-5;     //   |analytic - numeric| <= abs + rel * |numeric|
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

// dL/dx by central differences, from loss_at(v) = L with the element set to v (the caller restores it):
//   float64: (L(x + h) - L(x - h)) / 2h,                                  error O(h^2)
//   float32: (8 (L(x + h) - L(x - h)) - (L(x + 2h) - L(x - 2h))) / 12h,   error O(h^4)
// float's rounding needs a large h (2^-10), and the four-point rule keeps its truncation error small.
double central_difference(const std::function<double(double)>& loss_at, double x, double h);
GradcheckResult gradcheck(const CheckedFunction& f, const std::vector<Array>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace gs
