// One training step of TransformerLM against its GEMM floor, one thread, in one run.
//
// The step (forward, backward, and an AdamW update) is timed as a whole. While one step runs, the
// engine logs the shape of every matrix product it makes; those same products are then timed alone
// through cblas_dgemm on preallocated buffers: the floor that no implementation of this step can beat.
// The ratio step / floor says how much time goes elsewhere (elementwise ops, copies, the tape).
//
//   build/bin/bench_train_step [repetitions, default 10]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <cblas.h>

#include "engine/engine.hpp"
#include "nn/optim.hpp"
#include "nn/transformer_lm.hpp"

extern "C" void openblas_set_num_threads(int);

using namespace gs;
using Clock = std::chrono::steady_clock;

namespace {

struct Size {
  std::size_t batch, seq, d_model, heads, layers, vocab;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

IndexArray random_ids(std::size_t batch, std::size_t seq, std::size_t vocab, std::mt19937_64& rng) {
  IndexArray ids = IndexArray::from_shape({batch, seq});
  std::uniform_int_distribution<std::int64_t> pick(0, static_cast<std::int64_t>(vocab) - 1);
  for (auto& id : ids) id = pick(rng);
  return ids;
}

void run(const Size& s, int reps) {
  nn::ModelConfig config;
  config.vocab = s.vocab;
  config.context = s.seq;
  config.d_model = s.d_model;
  config.heads = s.heads;
  config.layers = s.layers;
  config.placement = nn::Placement::pre;
  nn::TransformerLM model(config);
  nn::Adam optimizer(model.named_parameters(), nn::adamw_options());
  std::mt19937_64 rng(1);
  const IndexArray ids = random_ids(s.batch, s.seq, s.vocab, rng);
  const IndexArray targets = random_ids(s.batch, s.seq, s.vocab, rng);

  Tape tape;
  TapeScope scope(tape);
  std::vector<GemmShape> gemms;
  auto step = [&](bool log) {
    tape.reset();
    if (log) set_gemm_log(&gemms);
    Var loss = model.loss(ids, targets);
    loss.backward();
    set_gemm_log(nullptr);
    optimizer.step(1e-4);
    optimizer.zero_grad();
  };
  step(true);  // warm-up, and the log of this step's matrix products

  // Buffers big enough for the largest product, filled with numbers (not zeros or NaNs).
  std::size_t most = 1;
  for (const GemmShape& g : gemms)
    most = std::max({most, std::size_t(g.n) * g.k, std::size_t(g.k) * g.m, std::size_t(g.n) * g.m});
  std::vector<double> a(most, 0.5), b(most, 0.25), c(most, 0.0);
  double flops = 0.0;
  for (const GemmShape& g : gemms) flops += 2.0 * g.n * g.m * g.k;

  std::vector<double> step_times, floor_times;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    step(false);
    step_times.push_back(seconds_since(t0));

    t0 = Clock::now();
    for (const GemmShape& g : gemms)
      cblas_dgemm(CblasRowMajor, g.transpose_a ? CblasTrans : CblasNoTrans, g.transpose_b ? CblasTrans : CblasNoTrans,
                  g.n, g.m, g.k, 1.0, a.data(), g.transpose_a ? g.n : g.k, b.data(), g.transpose_b ? g.k : g.m, 0.0,
                  c.data(), g.m);
    floor_times.push_back(seconds_since(t0));
  }
  const double step_ms = median(step_times) * 1e3, floor_ms = median(floor_times) * 1e3;
  std::printf("B=%zu T=%zu d=%zu H=%zu L=%zu V=%zu (pre-LN, %zu parameters)\n", s.batch, s.seq, s.d_model, s.heads,
              s.layers, s.vocab, model.parameter_count());
  std::printf("  training step (forward + backward + AdamW)  %8.2f ms   median of %d\n", step_ms, reps);
  std::printf("  GEMM floor (%zu dgemm calls, %.1f MFLOP)      %8.2f ms   (%.2f GFLOP/s)\n", gemms.size(),
              flops / 1e6, floor_ms, flops / (floor_ms * 1e-3) / 1e9);
  std::printf("  ratio step / floor                          %8.2fx   (target: 1.3x or less)\n\n", step_ms / floor_ms);
}

}  // namespace

int main(int argc, char** argv) {
  openblas_set_num_threads(1);
  const int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  std::printf("One training step of TransformerLM against the same matrix products alone, one thread.\n\n");
  run({16, 32, 64, 4, 6, 64}, reps);
  run({8, 128, 128, 4, 6, 96}, reps);
  return 0;
}
