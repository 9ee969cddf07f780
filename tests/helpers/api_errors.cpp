// Prints the error of each common misuse of the engine's API, one per line, as a student would meet
// it: the run that docs/reliability.md ("The engine's API") quotes. Build: the target gradscope_api_errors.
#include <cstdio>
#include <functional>
#include <string>

#include "engine/engine.hpp"

using namespace gs;

namespace {

void show(const char* what, const std::function<void()>& misuse) {
  try {
    misuse();
    std::printf("%-28s no error\n", what);
  } catch (const Error& e) {
    std::printf("%-28s %s\n", what, e.what());
  }
}

}  // namespace

int main() {
  Tape tape;
  TapeScope scope(tape);
  const Var a = tape.leaf(xt::ones<Real>({3, 4}));
  const Var b = tape.leaf(xt::ones<Real>({4, 3}));
  show("add (3, 4) + (4, 3)", [&] { add(a, b); });
  show("matmul (3, 4) @ (3, 4)", [&] { matmul(a, a); });
  show("sum over axis 2 of (3, 4)", [&] { sum(a, {2}); });
  show("reshape (3, 4) to (5, 2)", [&] { reshape(a, {5, 2}); });
  show("reshape to an overflow", [&] { reshape(a, {1L << 40, 1L << 40, 12}); });
  show("backward of a non-scalar", [&] { mul(a, a).backward(); });
  Tape other;
  const Var c = other.leaf(xt::ones<Real>({3, 4}));
  show("add of two tapes' values", [&] { add(a, c); });
  const Var stale = sum(mul(a, a));
  tape.reset();
  show("a Var after tape.reset()", [&] { stale.backward(); });
  tape.anomaly_mode = true;
  show("anomaly mode: log(-2)", [&] { log(tape.leaf(Array{1.0, -2.0})); });
  return 0;
}
