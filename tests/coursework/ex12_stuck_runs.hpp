// Exercise 12 (docs/coursework.md#ex12): which runs of a small warmup grid get stuck? Predict, run, explain.
// The grid (small_grid.hpp): Post-LN and Pre-LN, peak learning rates 0.003, 0.01 and 0.03, without
// warmup (W = 0) and with a linear warmup over W = 50 steps, 12 runs of 150 steps each, seed 0, on the
// Markov corpus (vocab 16): a 3-layer model with d = 16 and 2 heads, batches of 8 x 16, Adam(0.9, 0.98).
//   lr(step) = lr * (step + 1) / W for step < W, then lr                      (W = 0: lr from the start)
// A run's verdict from its final held-out loss L (experiments/lib/training.hpp), with log V = 2.7726
// (every token equally likely) and H1 = 2.7434 (the token frequencies, the context ignored):
//   diverged  L is NaN or L > log V + 0.05
//   stuck     L > H1 - 0.05 = 2.6934: the model learned the token frequencies and nothing more
//   trained   otherwise
// The answer is a file, ex12_stuck_runs.txt (student/ for you): one line per run, "post 0 0.03 ?";
// replace each ? by 1 (the run gets stuck) or 0 (it trains), from what you have read, before you run
// anything. The check runs the grid and compares, run by run.
// Module 4, the question. Difficulty: 2/3. Time: about 30 min (reading), seconds (the check).
#pragma once

namespace gs::coursework {

inline constexpr const char* kStuckRunsFile = "ex12_stuck_runs.txt";

}  // namespace gs::coursework
