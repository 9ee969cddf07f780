// The check of exercise 5, for the student: scripts/exercise 5 (docs/coursework.md#ex5)
#include <tuple>

#include "ex5_layernorm_backward.hpp"
#include "exercise.hpp"
#include "engine/engine.hpp"
#include "nn/layernorm.hpp"

namespace check_ex5_layernorm_backward {  // one namespace per test file: the files compile in groups

using namespace gs;

namespace {

// LayerNorm as one tape entry: nn's forward, your backward.
Var your_layernorm(const Var& x, const Var& w, const Var& b, double eps) {
  nn::LayerNormStats stats;
  Array y = nn::layernorm_forward(x.value(), w.value(), b.value(), eps, stats);
  return x.tape().record("your_layernorm", {x, w, b}, std::move(y), [eps](const BackwardArgs& g) -> Grads {
    return gs::coursework::layernorm_backward(g.grad, g.in(0), g.in(1), eps);
  }, Site::current());
}

}  // namespace

EXERCISE_CASE("ex5", "layernorm backward: equals the gradients the tape computes through the composite") {
  // layernorm_composite is built from engine ops (mean, sub, mul, sqrt, div): the tape differentiates
  // it step by step. At eps 1e-5 on x ~ N(0, 1), and at eps 0.5 on small x, where eps's place matters.
  for (const auto& [scale, eps] : {std::pair{1.0, 1e-5}, std::pair{0.1, 0.5}}) {
    INFO("x ~ N(0, " << scale << "^2), eps = " << eps);
    const Array xa = scale * test::randn({2, 3, 6}, 1) + 0.7, wa = 1.0 + 0.3 * test::randn({6}, 2);
    const Array ba = test::randn({6}, 3), g = test::randn({2, 3, 6}, 4);
    Tape tape;
    TapeScope scope(tape);
    Var x = tape.leaf(xa), w = tape.leaf(wa), b = tape.leaf(ba);
    nn::layernorm_composite(x, w, b, eps).backward(g);
    const Grads yours = gs::coursework::layernorm_backward(g, xa, wa, eps);
    REQUIRE(yours.size() == 3);
    REQUIRE_CLOSE(yours[0], x.grad(), test::tol(1e-10, 1e-4), test::tol(1e-12, 1e-5));
    REQUIRE_CLOSE(yours[1], w.grad(), test::tol(1e-10, 1e-4), test::tol(1e-12, 1e-5));
    REQUIRE_CLOSE(yours[2], b.grad(), 1e-10, 1e-12);
  }
}

EXERCISE_CASE("ex5", "layernorm backward: an op with your backward passes a gradient check") {
  test::require_gradcheck([](const test::Vars& v) { return your_layernorm(v[0], v[1], v[2], 1e-5); },
                          {test::randn({3, 5}, 5), 1.0 + 0.3 * test::randn({5}, 6), test::randn({5}, 7)});
  // Inside a chain, so that the incoming gradient is not all ones.
  test::require_gradcheck([](const test::Vars& v) { return tanh(your_layernorm(v[0] * v[0], v[1], v[2], 0.1)); },
                          {test::randn({2, 2, 4}, 8), test::randn({4}, 9), test::randn({4}, 10)});
}

EXERCISE_CASE("ex5", "layernorm backward: dx sums to 0 in every row, and is orthogonal to x_hat") {
  // The two means take out what a shift and a scale of the row would change, which LayerNorm ignores:
  // sum_i dx_i = 0 and, with eps = 0, sum_i dx_i x_hat_i = 0 (eps > 0 leaves a trace of size eps / var).
  // A backward without them fails here.
  const Array xa = test::randn({4, 6}, 11), g = test::randn({4, 6}, 12);
  const Grads yours = gs::coursework::layernorm_backward(g, xa, xt::ones<Real>({6}), 0.0);
  nn::LayerNormStats stats;
  const Array x_hat = nn::layernorm_forward(xa, xt::ones<Real>({6}), xt::zeros<Real>({6}), 0.0, stats);
  for (std::size_t r = 0; r < 4; ++r) {
    double sum = 0.0, dot = 0.0;
    for (std::size_t i = 0; i < 6; ++i) {
      sum += yours[0](r, i);
      dot += yours[0](r, i) * x_hat(r, i);
    }
    INFO("row " << r);
    REQUIRE_SMALL(sum, test::tol(1e-12, 1e-5));
    REQUIRE_SMALL(dot, test::tol(1e-12, 1e-5));
  }
}

}  // namespace check_ex5_layernorm_backward
