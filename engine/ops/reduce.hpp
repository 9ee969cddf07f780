// Reductions along axes, the softmax family and the cross-entropy loss.
#pragma once

#include <vector>

#include "engine/var.hpp"

namespace gs {

// Sum / mean / max over `axes` (empty: over every axis). keepdims leaves the reduced axes as size 1.
Var sum(const Var& x, const std::vector<int>& axes = {}, bool keepdims = false, Site site = Site::current());
Var mean(const Var& x, const std::vector<int>& axes = {}, bool keepdims = false, Site site = Site::current());
// Where several elements tie for the max, the gradient is shared equally among them.
Var max(const Var& x, const std::vector<int>& axes = {}, bool keepdims = false, Site site = Site::current());

// softmax(x)_i = e^(x_i - m) / sum_j e^(x_j - m) along `axis`, m = max_j x_j (so e^ never overflows).
Var softmax(const Var& x, int axis = -1, Site site = Site::current());
// log softmax(x)_i = x_i - m - log sum_j e^(x_j - m), stable for any finite logits.
Var log_softmax(const Var& x, int axis = -1, Site site = Site::current());

// The mean over all positions of -log softmax(logits)[target]: logits (..., C), targets (...) with
// integer classes in [0, C). A scalar.
Var cross_entropy(const Var& logits, const IndexArray& targets, Site site = Site::current());
// Its arithmetic on plain arrays, forward beside backward (`break gs::cross_entropy_backward` in gdb):
//   forward:   logits (..., C), targets (...) -> mean over rows r of logsumexp(z_r) - z_r[t_r]
//   backward:  dL/dz_r = grad * (softmax(z_r) - onehot(t_r)) / rows   -> (..., C)
double cross_entropy_forward(const Array& logits, const IndexArray& targets);
Array cross_entropy_backward(double grad, const Array& logits, const IndexArray& targets);

}  // namespace gs
