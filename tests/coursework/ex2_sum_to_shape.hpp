// Exercise 2 (docs/coursework.md#ex2): summing a gradient back to the shape of a broadcast input.
// Broadcasting (NumPy's rule): shapes are aligned on the right, a missing dimension counts as 1, and a
// dimension of 1 is stretched to the other's size:
//   (2, 3) with (3,) -> (2, 3);   (4, 1, 5) with (3, 1) -> (4, 3, 5);   (2, 3) with (4,) -> error
// If x of shape s was broadcast to shape S in the forward pass, every element of x was used once per
// copy, so its gradient is the sum over the copies: with grad = dL/d(broadcast x), of shape S,
//   dL/dx = grad summed over the S.size() - s.size() leading axes that broadcasting added
//           and over every axis where s has a 1 and S does not,  then given the shape s
//   (2, 3) -> (3,): sum over axis 0;    (4, 3, 5) -> (3, 1): sum over axes 0 and 2
// The tape does this once for every input of every op (engine/broadcast.hpp), so no op repeats it.
// Module 1, the engine. Difficulty: 1/3. Time: about 30 min.
#pragma once

#include "engine/array.hpp"

namespace gs::coursework {

// dL/dx of shape `shape` from grad = dL/d(x broadcast to grad's shape). When grad's shape is not a
// broadcast of `shape` ((2, 3) to (4,), or to a shape with more dimensions than grad's), throws
// gs::Error whose message names "sum_to_shape" and both shapes. Do not call gs::sum_to_shape.
Array sum_to_shape(const Array& grad, const Shape& shape);

}  // namespace gs::coursework
