// The tape's per-op overhead on tiny tensors: a chain of scalar ops, forward and then backward,
// against the same arithmetic on the same xtensor arrays with no tape (forward, and the backward's
// gradients by hand), in one run. Times are the CPU time of this thread, as in bench_train_step: wall
// time would count the time the thread waits for a core, which on a busy machine swamps a few ms.
//
//   build/bin/bench_engine_overhead [--chain 10000] [--reps 30]
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <vector>

#include "engine/engine.hpp"
#include "experiments/lib/harness.hpp"
#include "experiments/lib/memory.hpp"

using namespace gs;

namespace {

// Peak RSS per op: 3.27 GB at --chain 3000000 less 9.5 MB at --chain 300 (/usr/bin/time -v, --reps 1) is
// 1086 bytes; a tape entry with its value and gradient, and the plain loop's kept array.
constexpr double bytes_per_op = 1100.0;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The CPU time of this thread, in seconds.
double cpu_now() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
double seconds_since(double t0) { return cpu_now() - t0; }

// The CPU times of each repetition.
struct Timings {
  std::vector<double> fwd, bwd, plain, plain_bwd;
};

// The chain on the tape: y = tanh(y * c + c), `links` times, then backward from y. Returns x's
// gradient (a checksum, so that no work is optimized away).
double tape_chain(Tape& tape, int links, Timings& t) {
  tape.reset();
  double t0 = cpu_now();
  Var c = tape.constant(Array{0.5});
  Var y = tape.leaf(Array{0.1});
  Var x = y;
  for (int i = 0; i < links; ++i) y = tanh(y * c + c);
  t.fwd.push_back(seconds_since(t0));

  t0 = cpu_now();
  y.backward(Array{1.0});
  t.bwd.push_back(seconds_since(t0));
  return x.grad()(0);
}

// The same arithmetic with the same array type and no tape: the floor for this work. Forward keeps
// the values a backward pass would need, as the tape keeps them; then the backward arithmetic the
// ops' backward functions do, by hand, from the last link down: tanh sends g * (1 - y^2), add passes
// g on (a copy, as its backward returns), mul sends g * c. Returns a checksum.
double plain_chain(int links, Timings& t) {
  double t0 = cpu_now();
  Array v = Array{0.1}, k = Array{0.5};
  std::vector<Array> kept;
  kept.reserve(static_cast<std::size_t>(3 * links));
  for (int i = 0; i < links; ++i) {
    kept.push_back(v * k);
    kept.push_back(kept.back() + k);
    kept.push_back(xt::tanh(kept.back()));
    v = kept.back();
  }
  t.plain.push_back(seconds_since(t0));

  t0 = cpu_now();
  Array g = Array{1.0};
  for (int i = links - 1; i >= 0; --i) {
    const Array& y_tanh = kept[static_cast<std::size_t>(3 * i + 2)];
    Array g_add = g * (1.0 - y_tanh * y_tanh);
    Array g_mul = g_add;
    g = g_mul * k;
  }
  t.plain_bwd.push_back(seconds_since(t0));
  return v(0) + g(0);
}

void report(const Timings& t, int ops, int reps, double sink) {
  const double f = median(t.fwd) / ops * 1e9, b = median(t.bwd) / ops * 1e9, p = median(t.plain) / ops * 1e9;
  const double pb = median(t.plain_bwd) / ops * 1e9;
  std::printf("engine overhead: a chain of %d ops on 1-element arrays, median of %d runs, CPU time\n", ops, reps);
  std::printf("  forward  (tape)      %8.1f ns/op\n", f);
  std::printf("  backward (tape)      %8.1f ns/op\n", b);
  std::printf("  forward+backward     %8.1f ns/op   (target: at most 1000 ns/op)\n", f + b);
  std::printf("  plain xtensor, no tape %6.1f ns/op\n", p);
  std::printf("  plain xtensor, the backward's arithmetic by hand %6.1f ns/op\n", pb);
  std::printf("  the tape's own cost: (forward+backward) - (plain forward + plain backward) %6.1f ns/op\n",
              f + b - p - pb);
  std::printf("  ratio forward / plain          %6.2fx\n", f / p);
  std::printf("  ratio (forward+backward) / plain %4.2fx\n", (f + b) / p);
  std::printf("(checksum %g)\n", sink);
}

void run(int chain, int reps) {
  // The chain alternates y = tanh(y * c + c): three ops per link, each on a 1-element array.
  const int links = chain / 3;
  const int ops = 3 * links;
  experiments::check_bytes(bytes_per_op * ops, "a tape of " + std::to_string(ops) + " ops and their plain copies",
                           "--chain " + std::to_string(chain));
  Tape tape;
  TapeScope scope(tape);
  Timings t;
  double sink = 0.0;
  for (int r = 0; r < reps; ++r) {
    sink += tape_chain(tape, links, t);
    sink += plain_chain(links, t);
  }
  report(t, ops, reps, sink);
}

}  // namespace

int main(int argc, char** argv) {
  experiments::Experiment ex("bench_engine_overhead",
                             "The tape's per-op overhead: a chain of scalar ops, forward and backward, against plain xtensor");
  int chain = 10000, reps = 30;
  experiments::add_flag(ex.app, "--chain", chain, "ops in the chain", experiments::Whole{3});
  experiments::add_flag(ex.app, "--reps", reps, "repetitions (the median is reported)", experiments::Whole{1});
  return ex.main(argc, argv, [&] { run(chain, reps); });
}
