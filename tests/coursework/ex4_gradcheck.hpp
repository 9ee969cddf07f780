// Exercise 4 (docs/coursework.md#ex4): a gradient check, written by you. The check of this exercise
// hands your function correct ops (it must say yes) and ops with planted bugs in their backward (it
// must say no).
//   analytic:  dL/dx_i from one backward pass
//   numeric:   (L(x + h e_i) - L(x - h e_i)) / (2h)     central difference, error O(h^2)
// Module 1, the engine. Difficulty: 2/3. Time: about 45 min.
#pragma once

#include <functional>

#include "engine/array.hpp"
#include "engine/var.hpp"

namespace gs::coursework {

// f maps a leaf of x's shape to a scalar (a 0-d Var), recording its ops on the current tape.
using ScalarFunction = std::function<Var(const Var&)>;

// True when the gradient of f at x from backward() agrees with central finite differences at every
// element of x. Do not call gs::gradcheck: this exercise is writing it.
bool gradients_agree(const ScalarFunction& f, const Array& x);

}  // namespace gs::coursework
