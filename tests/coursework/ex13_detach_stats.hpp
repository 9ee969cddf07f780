// Exercise 13 (docs/coursework.md#ex13): an intervention on the backward pass, written by you, and a
// prediction of what it does to the small grid's stuck run (ex12: Post-LN, lr 0.03, no warmup).
// LayerNorm (exercise 5): mu, var, rstd = 1 / sqrt(var + eps), x_hat = (x - mu) rstd, y = x_hat w + b.
// Its true backward, with g = dL/dy and g_hat = g * w:
//   dL/dx = rstd * (g_hat - mean(g_hat) - x_hat * mean(g_hat * x_hat))
// With the statistics detached, mu and var count as constants in the backward pass (the forward pass
// is unchanged), so only the first term is left:
//   dL/dx = rstd * g_hat,     dL/dw and dL/db unchanged (sums over rows of g * x_hat and of g)
// The check puts your backward into every LayerNorm of every block (not the final ln_f), trains seeds
// 0, 1 and 2 of that run with and without it, and compares the outcome with your predictions, read
// from ex13_detach_stats.txt (student/ for you), before you run anything:
//   ln_inputs_smaller   1 if the RMS of what enters the blocks' LNs (x + F(x)) ends smaller with the
//                       intervention than without (mean over the seeds), else 0
//   loss_lower          1 if the final held-out loss ends lower with it (mean over the seeds), else 0
// Module 4, the question. Difficulty: 2/3. Time: about 45 min.
#pragma once

#include "engine/array.hpp"
#include "engine/tape.hpp"

namespace gs::coursework {

// grad = dL/dy (..., d), x (..., d), weight (d,) -> {dx (..., d), dweight (d,), dbias (d,)}, with mu and
// var constants. Do not call nn::layernorm_backward.
Grads layernorm_backward_detached(const Array& grad, const Array& x, const Array& weight, double eps = 1e-5);

inline constexpr const char* kDetachStatsFile = "ex13_detach_stats.txt";

}  // namespace gs::coursework
