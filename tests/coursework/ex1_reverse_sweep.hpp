// Exercise 1 (docs/coursework.md#ex1): the reverse sweep, the loop at the heart of Tape::backward.
// The tape lists its entries in creation order, so entry i's inputs all have indices below i. With
// g_i = dL/d(value of entry i), a root r and a seed s = dL/d(value of r):
//   g_r = s;  g_i = 0 for every other entry
//   for i = r, r - 1, ..., 0:             every entry that reads i has a larger index, so g_i is complete
//     if a gradient reached i and entry i has a backward:
//       grads = backward(BackwardArgs{g_i, value_i, the values of i's inputs, which of them require a gradient})
//       for every input k of i (tape index j = inputs[k]) that requires a gradient:
//         g_j += sum_to_shape(grads[k], shape of value_j)      (an input that was broadcast gets the sum)
// Entry (engine/tape.hpp): value, inputs, backward (empty where no gradient is needed), requires_grad.
// Module 1, the engine. Difficulty: 2/3. Time: about 45 min.
#pragma once

#include <vector>

#include "engine/array.hpp"
#include "engine/tape.hpp"

namespace gs::coursework {

// g_0 .. g_root of the loop above: one array per entry 0..root, each in its entry's shape; zeros for
// an entry that no gradient reaches or that requires none. Reads the tape and changes nothing on it
// (not Entry::grad, not a parameter's grad). Do not call Tape::backward: this exercise is writing it.
// gs::sum_to_shape (engine/broadcast.hpp) does the summing; exercise 2 writes it.
std::vector<Array> reverse_sweep(const Tape& tape, int root, const Array& seed);

}  // namespace gs::coursework
