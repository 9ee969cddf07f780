// Lifetime and threads: a Var that outlives its Tape, a Tape used from a second thread, and one
// Parameter used by two threads at once, each on its own tape (docs/engine.md, "Threads and lifetime").
#include <atomic>
#include <string>
#include <thread>

#include "check.hpp"
#include "engine/engine.hpp"

namespace test_engine_lifetime {  // one namespace per test file: the files compile in groups

using namespace gs;

namespace {

// The message of the gs::Error that f throws ("" if it throws none).
template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string at(const std::string& op, int line) {
  return op + " at test_engine_lifetime.cpp:" + std::to_string(line);
}

}  // namespace

// ---- a Var whose tape is gone ----

TEST_CASE("a Var whose Tape was destroyed throws a clear error instead of reading freed memory", "[lifetime]") {
  // Regression: a Var held a plain Tape*, so every use after the tape's destruction read freed memory
  // (AddressSanitizer: heap-use-after-free).
  Var orphan;
  {
    Tape tape;
    orphan = exp(tape.leaf(Array{1.0, 2.0}));
  }
  const std::string v = message_of([&] { orphan.value(); }); const int v_line = __LINE__;
  REQUIRE_THAT(v, Catch::StartsWith(at("Var", v_line)) && Catch::Contains("destroyed") && Catch::Contains("tape index 1"));
  const std::string op = message_of([&] { tanh(orphan); }); const int op_line = __LINE__;
  REQUIRE_THAT(op, Catch::StartsWith(at("Var", op_line)) && Catch::Contains("destroyed"));
  const std::string b = message_of([&] { orphan.backward(); }); const int b_line = __LINE__;
  REQUIRE_THAT(b, Catch::StartsWith(at("Var", b_line)) && Catch::Contains("destroyed"));

  // A new tape may take over the old one's slot: the orphan is still refused, the new tape's Vars work.
  Tape next;
  Var fresh = next.leaf(Array{3.0});
  REQUIRE_THAT(message_of([&] { orphan.shape(); }), Catch::Contains("destroyed"));
  REQUIRE(fresh.value()(0) == 3.0);
}

TEST_CASE("a Var made on a thread's own tape is refused after that thread ended", "[lifetime][threads]") {
  Var from_worker;
  std::thread worker([&] { from_worker = Tape::current().leaf(Array{1.0}); });  // the worker's thread_local tape
  worker.join();  // ... which died with the worker
  REQUIRE_THAT(message_of([&] { from_worker.value(); }), Catch::Contains("destroyed"));
}

TEST_CASE("a Var of a reset tape is still told apart from one of a destroyed tape", "[lifetime]") {
  Tape tape;
  Var old = tape.leaf(Array{1.0});
  tape.reset();
  REQUIRE_THAT(message_of([&] { old.value(); }), Catch::Contains("reset") && !Catch::Contains("destroyed"));
}

// ---- a tape used from a second thread: refused ----

TEST_CASE("a tape used from a thread other than the one that made it throws, naming the call", "[threads]") {
  // Regression: two threads recording on one tape raced on its entries (a crash or a corrupt tape).
  Tape tape;
  Var x = tape.leaf(Array{1.0, 2.0});
  Var y = sum(x * x);
  std::string record, leaf, value, backward, reset, scope;
  int record_line = 0, leaf_line = 0;
  std::thread other([&] {
    record = message_of([&] { exp(x); }); record_line = __LINE__;
    leaf = message_of([&] { tape.leaf(Array{0.0}); }); leaf_line = __LINE__;
    value = message_of([&] { x.value(); });
    backward = message_of([&] { y.backward(); });
    reset = message_of([&] { tape.reset(); });
    scope = message_of([&] { TapeScope use(tape); exp(Tape::current().leaf(Array{0.0})); });
  });
  other.join();
  // The first check an op makes is on its input's value, so the message says "Var", at the op's line.
  REQUIRE_THAT(record, Catch::StartsWith(at("Var", record_line)) && Catch::Contains("another thread"));
  REQUIRE_THAT(leaf, Catch::StartsWith(at("leaf", leaf_line)) && Catch::Contains("another thread"));
  for (const std::string& m : {value, backward, reset, scope}) REQUIRE_THAT(m, Catch::Contains("another thread"));
  // The owner's tape is untouched and still works.
  REQUIRE(tape.size() == 3);  // x, x * x, the sum: nothing was appended
  y.backward();
  REQUIRE(x.grad() == Array{2.0, 4.0});
}

// ---- one parameter, two threads, two tapes: safe ----

TEST_CASE("one Parameter used by two threads at once, each on its own tape, loses no gradient", "[threads][parameter]") {
  // Regression: the backward passes of two threads added into the parameter's gradient at the same
  // time (lost updates), and the parameter's one-entry leaf cache (tape, generation, index) was
  // overwritten by the other thread, so a tape could get a second leaf for the parameter, or a leaf
  // index of the other tape.
  const std::size_t n = 4096;
  Parameter w(xt::ones<Real>({n}), "w");
  const Array c = xt::arange<double>(static_cast<double>(n)) - 2000.0;  // integers: every sum is exact
  const int steps = 400;
  std::atomic<int> extra_leaves{0};
  auto work = [&] {
    Tape& tape = Tape::current();
    for (int s = 0; s < steps; ++s) {
      tape.reset();
      Var k = tape.constant(c);
      Var loss = sum(w * k) + sum(w * k);  // w used twice: one leaf for both uses
      int leaves = 0;
      for (std::size_t i = 0; i < tape.size(); ++i) leaves += std::string(tape.entry(static_cast<int>(i)).op) == "param";
      if (leaves != 1) ++extra_leaves;
      loss.backward();  // adds 2c into w.grad()
    }
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  REQUIRE(extra_leaves == 0);
  const Array expected = 2.0 * 2.0 * steps * c;  // 2 threads x steps x 2c, exactly
  REQUIRE(bool(w.grad() == expected));
}

TEST_CASE("one model per thread, each on its thread's own tape, gives the bits of a run on one thread", "[threads]") {
  // The experiments' pattern: parallel_for trains one model per thread on Tape::current().
  auto train = [](unsigned seed) {
    Parameter w(test::randn({6, 4}, seed), "w");
    const Array x = test::randn({5, 6}, seed + 100);
    Tape& tape = Tape::current();
    for (int s = 0; s < 20; ++s) {
      tape.reset();
      Var loss = mean(tanh(matmul(tape.constant(x), w)));
      loss.backward();
      w.value() -= 0.1 * w.grad();
      w.zero_grad();
    }
    return Array(w.value());
  };
  const Array alone1 = train(1), alone2 = train(2);
  Array threaded1, threaded2;
  std::thread a([&] { threaded1 = train(1); }), b([&] { threaded2 = train(2); });
  a.join();
  b.join();
  REQUIRE(bool(threaded1 == alone1));
  REQUIRE(bool(threaded2 == alone2));
}

}  // namespace test_engine_lifetime
