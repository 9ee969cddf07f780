// The check of exercise, for the student: scripts/exercise 4 (docs/coursework.md#ex4)
// Your gradient check is itself tested: it must accept correct ops and reject ops whose backward
// carries a planted bug. Each bug below is one that real hand-written backwards have had.
#include <functional>
#include <string>
#include <vector>

#include <xtensor/xmath.hpp>

#include "exercise.hpp"
#include "engine/engine.hpp"
#include "engine/tape.hpp"
#include "ex4_gradcheck.hpp"

#ifndef GRADSCOPE_FLOAT32  // exercise 4 is a float64 checker: its tolerance, 1e-6 + 1e-5 |numeric|, is below float32's rounding
namespace check_ex4_gradcheck {  // one namespace per test file: the files compile in groups

using namespace gs;
using gs::coursework::gradients_agree;
using gs::coursework::ScalarFunction;

namespace {

// An elementwise op with a correct forward y = forward(x) and the given (possibly wrong) backward.
Var op(const Var& x, const char* name, const std::function<Array(const Array&)>& forward,
       const std::function<Array(const BackwardArgs&)>& backward) {
  return x.tape().record(name, {x}, forward(x.value()),
                         [backward](const BackwardArgs& g) -> Grads { return {backward(g)}; }, Site::current());
}

struct Case {
  std::string what;
  ScalarFunction f;
  Array x;
};

}  // namespace

EXERCISE_CASE("ex4", "gradcheck: accepts correct ops") {
  Array nearly_zero = test::randn({3, 4}, 1);
  nearly_zero(0, 0) = 1e-4;
  nearly_zero(2, 1) = -1e-4;
  const Array W = test::randn({3, 4}, 2);  // a constant of f
  const std::vector<Case> cases = {
      {"sum(tanh(x) * x)", [](const Var& x) { return sum(tanh(x) * x); }, test::randn({3, 4}, 3)},
      // At x = 1e-4 the gradient 3x^2 is 3e-8, smaller than the rounding error of the central
      // difference (~1e-16 |L| / h): a purely relative comparison fails there.
      {"sum(x^3) with x = +-1e-4 in two places", [](const Var& x) { return sum(x * x * x); }, nearly_zero},
      // Gradients of size ~1e4: a purely absolute tolerance of 1e-6 is below the rounding error.
      {"sum(exp(x)) at x ~ 9", [](const Var& x) { return sum(exp(x)); }, 9.0 + 0.5 * test::randn({2, 3}, 4)},
      {"cross_entropy(x W)", [W](const Var& x) {
         return cross_entropy(matmul(x, x.tape().constant(W)), IndexArray{1, 3});
       }, test::randn({2, 3}, 5)},
      {"mean(softmax(x)^2) over a (2, 3, 4) input",
       [](const Var& x) { return mean(pow(softmax(x), 2.0)); }, test::randn({2, 3, 4}, 6)},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    REQUIRE(gradients_agree(c.f, c.x));
  }
}

EXERCISE_CASE("ex4", "gradcheck: rejects each planted bug") {
  const Array w = test::randn({3, 4}, 7);  // weights of the loss: L = sum(w * op(x))
  auto loss_of = [w](std::function<Var(const Var&)> g) {
    return [w, g](const Var& x) { return sum(g(x) * x.tape().constant(w)); };
  };
  auto sin_fwd = [](const Array& x) { return Array(xt::sin(x)); };
  const std::vector<Case> cases = {
      {"sin with the sign of its derivative flipped", loss_of([&](const Var& x) {
         return op(x, "sin", sin_fwd, [](const BackwardArgs& g) { return Array(-g.grad * xt::cos(g.in(0))); });
       }), test::randn({3, 4}, 8)},
      {"sqrt without the 1/2: 1/sqrt(x) instead of 1/(2 sqrt(x))", loss_of([](const Var& x) {
         return op(x, "sqrt", [](const Array& a) { return Array(xt::sqrt(a)); },
                   [](const BackwardArgs& g) { return Array(g.grad / g.out); });
       }), test::randn_positive({3, 4}, 9)},
      {"exp that ignores the incoming gradient: returns e^x, not dL/dy * e^x", loss_of([](const Var& x) {
         return op(x, "exp", [](const Array& a) { return Array(xt::exp(a)); },
                   [](const BackwardArgs& g) { return g.out; });
       }), test::randn({3, 4}, 10)},
      {"log that divides by its output instead of its input", loss_of([](const Var& x) {
         return op(x, "log", [](const Array& a) { return Array(xt::log(a)); },
                   [](const BackwardArgs& g) { return Array(g.grad / g.out); });
       }), 2.0 + test::randn_positive({3, 4}, 11)},
      {"abs whose derivative forgets the sign: 1 instead of sign(x)", loss_of([](const Var& x) {
         return op(x, "abs", [](const Array& a) { return Array(xt::abs(a)); },
                   [](const BackwardArgs& g) { return g.grad; });
       }), test::randn_away_from_zero({3, 4}, 12)},
      {"tanh that is wrong in one element only (the last): 1% too large", loss_of([](const Var& x) {
         return op(x, "tanh", [](const Array& a) { return Array(xt::tanh(a)); }, [](const BackwardArgs& g) {
           Array d = g.grad * (1.0 - g.out * g.out);
           d.data()[d.size() - 1] *= 1.01;
           return d;
         });
       }), test::randn({3, 4}, 13)},
      {"sin whose derivative is 1e-4 too large (relative)", loss_of([&](const Var& x) {
         return op(x, "sin", sin_fwd, [](const BackwardArgs& g) { return Array(g.grad * xt::cos(g.in(0)) * 1.0001); });
       }), test::randn({3, 4}, 14)},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    REQUIRE_FALSE(gradients_agree(c.f, c.x));
  }
}

}  // namespace check_ex4_gradcheck
#endif
