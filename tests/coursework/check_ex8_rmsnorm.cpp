// The check of exercise, for the student: scripts/exercise 8 (docs/coursework.md#ex8)
#include <string>

#include "exercise.hpp"
#include "ex8_rmsnorm.hpp"
#include "nn/rmsnorm.hpp"

namespace check_ex8_rmsnorm {  // one namespace per test file: the files compile in groups

using namespace gs;
using gs::coursework::rmsnorm;

EXERCISE_CASE("ex8", "rmsnorm: values and gradients equal nn's fused RMSNorm") {
  // eps = 1e-5 on x ~ N(0, 1), and eps = 0.5 on small x, where eps's place in the formula matters.
  for (const auto& [scale, eps] : {std::pair{1.0, 1e-5}, std::pair{0.1, 0.5}}) {
    INFO("x ~ N(0, " << scale << "^2), eps = " << eps);
    const Array xa = scale * test::randn({2, 3, 5}, 1), wa = 1.0 + 0.3 * test::randn({5}, 2);
    const Array seed = test::randn({2, 3, 5}, 3);  // dL/dy: a random direction
    auto run = [&](auto norm) {
      Tape tape;
      TapeScope scope(tape);
      Var x = tape.leaf(xa), w = tape.leaf(wa);
      Var y = norm(x, w);
      y.backward(seed);
      return std::tuple{Array(y.value()), Array(x.grad()), Array(w.grad())};
    };
    const auto [y, dx, dw] = run([&](const Var& x, const Var& w) { return rmsnorm(x, w, eps); });
    const auto [y_ref, dx_ref, dw_ref] = run([&](const Var& x, const Var& w) { return nn::rmsnorm_fused(x, w, eps); });
    REQUIRE_CLOSE(y, y_ref, test::tol(1e-12, 1e-4), test::tol(1e-14, 1e-5));
    REQUIRE_CLOSE(dx, dx_ref, test::tol(1e-10, 1e-4), test::tol(1e-12, 1e-5));
    REQUIRE_CLOSE(dw, dw_ref, test::tol(1e-10, 1e-4), test::tol(1e-12, 1e-5));
  }
}

EXERCISE_CASE("ex8", "rmsnorm: passes a gradient check w.r.t. x and weight") {
  test::require_gradcheck([](const test::Vars& v) { return rmsnorm(v[0], v[1]); },
                          {test::randn({2, 3, 4}, 4), 1.0 + 0.3 * test::randn({4}, 5)});
  test::require_gradcheck([](const test::Vars& v) { return rmsnorm(v[0], v[1], 0.5); },
                          {0.1 * test::randn({3, 4}, 6), test::randn({4}, 7)});
}

EXERCISE_CASE("ex8", "rmsnorm: built from engine ops, not from a fused op or nn's RMSNorm") {
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.leaf(test::randn({2, 4}, 8)), w = tape.leaf(test::randn({4}, 9));
  const int first = static_cast<int>(tape.size());
  rmsnorm(x, w);
  REQUIRE(tape.size() - first >= 3);  // at least a square, a mean and a division
  for (int i = first; i < static_cast<int>(tape.size()); ++i) {
    const Entry& e = tape.entry(i);
    INFO("entry " << i << ": " << e.op << " at " << e.site.file_name());
    REQUIRE(std::string(e.op).find("norm") == std::string::npos);
    REQUIRE(std::string(e.site.file_name()).find("nn/layernorm") == std::string::npos);
    REQUIRE(std::string(e.site.file_name()).find("nn/rmsnorm") == std::string::npos);
  }
}

EXERCISE_CASE("ex8", "rmsnorm: a weight that is not (d,) throws gs::Error naming rmsnorm and both shapes") {
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.constant(test::randn({2, 5}, 10));
  // (1, 5) would broadcast without complaint: only an explicit check catches it.
  for (const Shape& ws : {Shape{4}, Shape{1, 5}}) {
    Var w = tape.constant(test::randn(ws, 11));
    INFO("weight " << shape_str(ws));
    try {
      rmsnorm(x, w);
      FAIL("no gs::Error was thrown");
    } catch (const gs::Error& e) {
      const std::string what = e.what();
      INFO(what);
      REQUIRE(what.find("rmsnorm") != std::string::npos);
      REQUIRE(what.find(shape_str(ws)) != std::string::npos);
      REQUIRE(what.find("(2, 5)") != std::string::npos);
    }
  }
}

}  // namespace check_ex8_rmsnorm
