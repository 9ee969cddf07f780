// The check of exercise 6, for the student: scripts/exercise 6 (docs/coursework.md#ex6)
#include "ex6_softmax_backward.hpp"
#include "exercise.hpp"
#include "engine/engine.hpp"
#include "nn/attention.hpp"

namespace check_ex6_softmax_backward {  // one namespace per test file: the files compile in groups

using namespace gs;

namespace {

// softmax over the last axis as one tape entry: the engine's forward value, your backward.
Var your_softmax(const Var& x) {
  Array y = softmax(x.tape().constant(x.value())).value();
  return x.tape().record("your_softmax", {x}, std::move(y), [](const BackwardArgs& g) -> Grads {
    return {gs::coursework::softmax_backward(g.grad, g.out)};
  }, Site::current());
}

}  // namespace

EXERCISE_CASE("ex6", "softmax backward: equals the engine's softmax gradient") {
  const Array xa = 2.0 * test::randn({2, 3, 5}, 1), g = test::randn({2, 3, 5}, 2);
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.leaf(xa);
  Var y = softmax(x);
  y.backward(g);
  const Array yours = gs::coursework::softmax_backward(g, y.value());
  REQUIRE(shape_of(yours) == Shape{2, 3, 5});
  REQUIRE_CLOSE(yours, x.grad(), test::tol(1e-12, 1e-4), test::tol(1e-14, 1e-5));
}

EXERCISE_CASE("ex6", "softmax backward: an op with your backward passes a gradient check") {
  test::require_gradcheck([](const test::Vars& v) { return your_softmax(v[0]); }, {test::randn({3, 4}, 3)});
  test::require_gradcheck([](const test::Vars& v) { return your_softmax(v[0] * v[0]) * v[0]; }, {test::randn({2, 3}, 4)});
}

EXERCISE_CASE("ex6", "softmax backward: a masked score gets gradient exactly 0, and every row's dx sums to 0") {
  Array xa = test::randn({3, 4}, 5);
  xa(0, 3) = nn::kMaskedScore;  // the future in causal attention
  xa(2, 1) = nn::kMaskedScore;
  Tape tape;
  TapeScope scope(tape);
  const Array y = softmax(tape.constant(xa)).value();
  const Array dx = gs::coursework::softmax_backward(test::randn({3, 4}, 6), y);
  REQUIRE(dx(0, 3) == 0.0);
  REQUIRE(dx(2, 1) == 0.0);
  for (std::size_t r = 0; r < 3; ++r) {  // softmax ignores a constant added to a row: sum_j dL/dx_j = 0
    INFO("row " << r);
    REQUIRE_SMALL(dx(r, 0) + dx(r, 1) + dx(r, 2) + dx(r, 3), test::tol(1e-14, 1e-5));
  }
}

}  // namespace check_ex6_softmax_backward
