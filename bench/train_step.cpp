// One training step of TransformerLM against its GEMM floor, one thread, in one run.
//
// The step (forward, backward, and an AdamW update) is timed as a whole. While one step runs, a log
// here records the shape of every matrix product the engine makes; those same products are then timed alone
// through cblas_dgemm on preallocated buffers: the floor that no implementation of this step can beat.
// The ratio step / floor says how much time goes elsewhere (elementwise ops, copies, the tape).
// Times are the CPU time of the benchmark's thread (one thread: OpenBLAS is set to one), median of
// the repetitions.
//
// It also reports the peak heap memory of one step (counted by the malloc wrappers below) beside what
// the step cannot do without: the values on the tape after the forward pass (the engine keeps every
// entry's value; each backward reads its inputs or its output from there), plus the parameters, their
// gradients and AdamW's two moments.
//
//   build/bin/bench_train_step [--reps 10] [--size small | large | both, default both]
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <malloc.h>
#include <cblas.h>

#include "engine/ops/linalg.hpp"
#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "experiments/lib/harness.hpp"
#include "nn/optim.hpp"
#include "nn/transformer_lm.hpp"

// ---- a counting allocator: every malloc family call of the process goes through these ----
// Each wrapper calls glibc's own allocator and adds the chunk's usable size to `live`; `peak` is the
// high-water mark of `live` since the last reset. Not under the sanitizers (they own malloc there).
#if defined(__SANITIZE_ADDRESS__)
#define GS_COUNT_MALLOC 0
#else
#define GS_COUNT_MALLOC 1
#endif

namespace heap {
std::atomic<long long> live{0}, peak{0};
inline void add(void* p) {
  if (!p) return;
  const long long now = live.fetch_add(static_cast<long long>(malloc_usable_size(p))) +
                        static_cast<long long>(malloc_usable_size(p));
  long long seen = peak.load();
  while (now > seen && !peak.compare_exchange_weak(seen, now)) {
  }
}
inline void remove(void* p) {
  if (p) live.fetch_sub(static_cast<long long>(malloc_usable_size(p)));
}
}  // namespace heap

#if GS_COUNT_MALLOC
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

void* malloc(size_t n) {
  void* p = __libc_malloc(n);
  heap::add(p);
  return p;
}
void* calloc(size_t n, size_t size) {
  void* p = __libc_calloc(n, size);
  heap::add(p);
  return p;
}
void free(void* p) {
  heap::remove(p);
  __libc_free(p);
}
void* realloc(void* p, size_t n) {
  heap::remove(p);
  void* q = __libc_realloc(p, n);
  heap::add(q ? q : (n ? p : nullptr));  // a failed realloc keeps p
  return q;
}
void* memalign(size_t alignment, size_t n) {
  void* p = __libc_memalign(alignment, n);
  heap::add(p);
  return p;
}
void* aligned_alloc(size_t alignment, size_t n) { return memalign(alignment, n); }
int posix_memalign(void** out, size_t alignment, size_t n) {
  *out = memalign(alignment, n);
  return *out ? 0 : ENOMEM;
}
}
#endif

using namespace gs;

namespace {

// The CPU time of this thread, in seconds: unlike wall time it does not count the time the thread
// waits while other processes have the core, so the ratios hold up on a busy machine.
double cpu_now() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// ---- the gemm log: every matrix product of the process passes through cblas_dgemm (or sgemm) below ----
// The engine calls cblas_dgemm for every matrix product. The definition below, in this executable,
// takes those calls before OpenBLAS does (the executable's own symbols come first); while a log is
// set it records each product's shape and CPU time, and it hands every call on to OpenBLAS's
// cblas_dgemm (cblas_sgemm), found with dlsym(RTLD_NEXT). The log reads the clock twice per gemm.
struct GemmShape {
  bool transpose_a, transpose_b;
  int n, m, k;           // op(a) is (n, k), op(b) is (k, m)
  double seconds = 0.0;  // the CPU time this gemm took inside the step
};
thread_local std::vector<GemmShape>* gemm_log = nullptr;
void set_gemm_log(std::vector<GemmShape>* log) { gemm_log = log; }

// Hands a product on to OpenBLAS's own `name` (cblas_dgemm for T = double, cblas_sgemm for float) and,
// while a log is set, records its shape and CPU time.
template <class T>
void logged_gemm(const char* name, CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint n, blasint m,
                 blasint k, T alpha, const T* a, blasint lda, const T* b, blasint ldb, T beta, T* c, blasint ldc) {
  using Gemm = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, T, const T*, blasint,
                        const T*, blasint, T, T*, blasint);
  static const Gemm openblas = reinterpret_cast<Gemm>(dlsym(RTLD_NEXT, name));
  const double start = gemm_log ? cpu_now() : 0.0;
  openblas(order, ta, tb, n, m, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (gemm_log) gemm_log->push_back({ta == CblasTrans, tb == CblasTrans, n, m, k, cpu_now() - start});
}

}  // namespace

extern "C" void cblas_dgemm(OPENBLAS_CONST enum CBLAS_ORDER order, OPENBLAS_CONST enum CBLAS_TRANSPOSE ta,
                            OPENBLAS_CONST enum CBLAS_TRANSPOSE tb, OPENBLAS_CONST blasint n, OPENBLAS_CONST blasint m,
                            OPENBLAS_CONST blasint k, OPENBLAS_CONST double alpha, OPENBLAS_CONST double* a,
                            OPENBLAS_CONST blasint lda, OPENBLAS_CONST double* b, OPENBLAS_CONST blasint ldb,
                            OPENBLAS_CONST double beta, double* c, OPENBLAS_CONST blasint ldc) {
  logged_gemm("cblas_dgemm", order, ta, tb, n, m, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// The float32 build's products.
extern "C" void cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER order, OPENBLAS_CONST enum CBLAS_TRANSPOSE ta,
                            OPENBLAS_CONST enum CBLAS_TRANSPOSE tb, OPENBLAS_CONST blasint n, OPENBLAS_CONST blasint m,
                            OPENBLAS_CONST blasint k, OPENBLAS_CONST float alpha, OPENBLAS_CONST float* a,
                            OPENBLAS_CONST blasint lda, OPENBLAS_CONST float* b, OPENBLAS_CONST blasint ldb,
                            OPENBLAS_CONST float beta, float* c, OPENBLAS_CONST blasint ldc) {
  logged_gemm("cblas_sgemm", order, ta, tb, n, m, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

namespace {

struct Size {
  std::size_t batch, seq, d_model, heads, layers, vocab;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

IndexArray random_ids(std::size_t batch, std::size_t seq, std::size_t vocab, std::mt19937_64& rng) {
  IndexArray ids = IndexArray::from_shape({batch, seq});
  std::uniform_int_distribution<std::int64_t> pick(0, static_cast<std::int64_t>(vocab) - 1);
  for (auto& id : ids) id = pick(rng);
  return ids;
}

double megabytes(double bytes) { return bytes / (1024.0 * 1024.0); }

// A pre-LN model of size s, its AdamW optimizer and one fixed random batch, on a tape of its own.
struct Trainer {
  explicit Trainer(const Size& s);
  // One step: forward, backward, AdamW update. `log`, when given, receives every gemm's shape and
  // time; `measure` keeps the size of the tape's values after the forward pass.
  void step(std::vector<GemmShape>* log, bool measure = false);

  nn::TransformerLM model;
  nn::Adam optimizer;
  IndexArray ids, targets;
  Tape tape;
  std::size_t entries = 0;   // tape entries after the forward pass of the measured step
  double tape_values = 0.0;  // bytes of every entry's value then
};

nn::ModelConfig config_of(const Size& s) {
  nn::ModelConfig config;
  config.vocab = s.vocab;
  config.context = s.seq;
  config.d_model = s.d_model;
  config.heads = s.heads;
  config.layers = s.layers;
  config.placement = nn::Placement::pre;
  return config;
}

Trainer::Trainer(const Size& s) : model(config_of(s)), optimizer(model.named_parameters(), nn::adamw_options()) {
  std::mt19937_64 rng(1);
  ids = random_ids(s.batch, s.seq, s.vocab, rng);
  targets = random_ids(s.batch, s.seq, s.vocab, rng);
}

void Trainer::step(std::vector<GemmShape>* log, bool measure) {
  tape.reset();
  if (log) log->clear();
  set_gemm_log(log);
  Var loss = model.loss(ids, targets);
  if (measure) {
    entries = tape.size();
    for (std::size_t i = 0; i < entries; ++i)
      tape_values += static_cast<double>(tape.entry(static_cast<int>(i)).value.size() * sizeof(Real));
  }
  loss.backward();
  set_gemm_log(nullptr);
  optimizer.step(1e-4);
  optimizer.zero_grad();
}

// Per repetition: the step as a whole (unlogged: the log reads the clock twice per gemm, about half a
// microsecond each), the time inside dgemm of the same step run again logged, and the GEMM floor:
// the step's products through cblas_dgemm alone, on buffers big enough for the largest, filled with
// numbers (not zeros or NaNs).
struct Timing {
  std::vector<double> step, in_gemm, floor;
};

Timing time_steps(Trainer& t, const std::vector<GemmShape>& gemms, int reps) {
  std::size_t most = 1;
  for (const GemmShape& g : gemms)
    most = std::max({most, std::size_t(g.n) * g.k, std::size_t(g.k) * g.m, std::size_t(g.n) * g.m});
  std::vector<Real> a(most, 0.5), b(most, 0.25), c(most, 0.0);  // the build's precision: dgemm or sgemm
  std::vector<GemmShape> timed;  // the gemms of one step, each with its time
  Timing out;
  for (int r = 0; r < reps; ++r) {
    double t0 = cpu_now();
    t.step(nullptr);
    out.step.push_back(cpu_now() - t0);
    t.step(&timed);
    double in_gemm = 0.0;
    for (const GemmShape& g : timed) in_gemm += g.seconds;
    out.in_gemm.push_back(in_gemm);

    t0 = cpu_now();
    for (const GemmShape& g : gemms)
      gemm(g.transpose_a, g.transpose_b, g.n, g.m, g.k, 1.0, a.data(), g.transpose_a ? g.n : g.k, b.data(),
           g.transpose_b ? g.k : g.m, 0.0, c.data(), g.m);
    out.floor.push_back(cpu_now() - t0);
  }
  return out;
}

// `peak`: the heap in use at its highest during the first step.
void report(const Size& s, const Trainer& t, const std::vector<GemmShape>& gemms, const Timing& times, double peak,
            int reps) {
  double flops = 0.0;
  for (const GemmShape& g : gemms) flops += 2.0 * g.n * g.m * g.k;
  const double step_ms = median(times.step) * 1e3, floor_ms = median(times.floor) * 1e3;
  std::printf("B=%zu T=%zu d=%zu H=%zu L=%zu V=%zu (pre-LN, %zu parameters)\n", s.batch, s.seq, s.d_model, s.heads,
              s.layers, s.vocab, t.model.parameter_count());
  std::printf("  training step (forward + backward + AdamW)  %8.2f ms   median of %d, CPU time\n", step_ms, reps);
  const char* blas = float32_build ? "sgemm" : "dgemm";
  std::printf("    of which inside %s (a logged re-run)   %8.2f ms   (the rest: %.2f ms)\n", blas,
              median(times.in_gemm) * 1e3, step_ms - median(times.in_gemm) * 1e3);
  std::printf("  GEMM floor (%zu %s calls, %.1f MFLOP)      %8.2f ms   (%.2f GFLOP/s)\n", gemms.size(), blas,
              flops / 1e6, floor_ms, flops / (floor_ms * 1e-3) / 1e9);
  std::printf("  ratio step / floor                          %8.2fx   (target: 1.3x or less)\n", step_ms / floor_ms);
  if (GS_COUNT_MALLOC) {
    const double params = static_cast<double>(t.model.parameter_count() * sizeof(Real));
    const double needed = t.tape_values + 4.0 * params;  // + parameters, gradients, AdamW m and v
    std::printf("  peak heap in use during the first step      %8.2f MB\n", megabytes(peak));
    std::printf("  values on the tape after forward (%zu entries) %6.2f MB\n", t.entries, megabytes(t.tape_values));
    std::printf("   + parameters, gradients, AdamW m and v    %8.2f MB   (4 x %zu %s)\n", megabytes(4.0 * params),
                t.model.parameter_count(), float32_build ? "floats" : "doubles");
    std::printf("  ratio peak / (values + parameter state)     %8.2fx   (target: under 2)\n", peak / needed);
  } else {
    std::printf("  peak memory: not counted under the sanitizers\n");
  }
  std::printf("\n");
}

void run(const Size& s, int reps) {
  Trainer t(s);
  TapeScope scope(t.tape);
  // The first step: the log of its matrix products, and its peak memory. Nothing of a step is
  // allocated before it (the tape is empty; AdamW's moments exist from the optimizer's constructor).
  std::vector<GemmShape> gemms;
  const long long before = heap::live.load();
  heap::peak.store(before);
  t.step(&gemms, true);
  const double peak = static_cast<double>(heap::peak.load());
  report(s, t, gemms, time_steps(t, gemms, reps), peak, reps);
}

}  // namespace

int main(int argc, char** argv) {
  experiments::Experiment ex("bench_train_step", "One training step of TransformerLM against its GEMM floor, and its peak memory");
  int reps = 10;
  std::string which = "both";
  experiments::add_flag(ex.app, "--reps", reps, "timed steps per size (the median is reported)", experiments::Whole{1});
  experiments::add_flag(ex.app, "--size", which, "small (B=16 T=32 d=64), large (B=8 T=128 d=128) or both",
                        experiments::one_of({"small", "large", "both"}));
  return ex.main(argc, argv, [&] {
    std::printf("One training step of TransformerLM against the same matrix products alone, one thread.\n\n");
    // The larger size first, so that the smaller one's memory is not part of its heap.
    if (which == "large" || which == "both") run({8, 128, 128, 4, 6, 96}, reps);
    if (which == "small" || which == "both") run({16, 32, 64, 4, 6, 64}, reps);
  });
}
