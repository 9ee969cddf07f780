// The check of exercise 2, for the student: scripts/exercise 2 (docs/coursework.md#ex2)
#include <string>
#include <utility>
#include <vector>

#include "engine/broadcast.hpp"
#include "ex2_sum_to_shape.hpp"
#include "exercise.hpp"

namespace check_ex2_sum_to_shape {  // one namespace per test file: the files compile in groups

using namespace gs;

EXERCISE_CASE("ex2", "sum_to_shape: equals the engine's on every kind of broadcast") {
  // (grad's shape, the input's shape)
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3}, {2, 3}},           // nothing broadcast
      {{2, 3}, {3}},              // a leading axis added
      {{2, 3}, {1, 3}},           // a 1 stretched
      {{2, 3}, {2, 1}},           // a trailing 1 stretched
      {{4, 3, 5}, {3, 1}},        // both at once
      {{2, 3, 4}, {}},            // a scalar (0-d) broadcast everywhere
      {{2, 3, 4}, {1}},           // a (1,) broadcast everywhere
      {{2, 1, 4}, {1, 1, 4}},     // a 1 that stays 1
      {{3, 2, 4, 5}, {2, 1, 5}},  // four dimensions
  };
  unsigned seed = 1;
  for (const auto& [from, to] : cases) {
    INFO("gradient " << shape_str(from) << " summed to " << shape_str(to));
    const Array grad = test::randn(from, seed++);
    const Array yours = gs::coursework::sum_to_shape(grad, to);
    const Array engine = gs::sum_to_shape(grad, to, "check", Site::current());
    REQUIRE(shape_of(yours) == to);
    REQUIRE_CLOSE(yours, engine, test::tol(1e-13, 1e-4), test::tol(1e-14, 1e-5));
  }
}

EXERCISE_CASE("ex2", "sum_to_shape: shapes that do not broadcast throw gs::Error naming both") {
  for (const auto& [from, to] : std::vector<std::pair<Shape, Shape>>{{{2, 3}, {4}}, {{2, 3}, {2}}, {{3}, {2, 3}},
                                                                    {{4, 3, 5}, {3, 2}}}) {
    INFO("gradient " << shape_str(from) << " summed to " << shape_str(to));
    try {
      gs::coursework::sum_to_shape(test::randn(from, 9), to);
      FAIL("no gs::Error was thrown");
    } catch (const gs::Error& e) {
      const std::string what = e.what();
      INFO(what);
      REQUIRE(what.find("sum_to_shape") != std::string::npos);
      REQUIRE(what.find(shape_str(from)) != std::string::npos);
      REQUIRE(what.find(shape_str(to)) != std::string::npos);
    }
  }
}

EXERCISE_CASE("ex2", "sum_to_shape: gives a broadcast add its gradients (checked against finite differences)") {
  // y = x + b with b (4,) added to every row of x (3, 4): an op whose backward hands the full-shape
  // gradient to both inputs, summed to b's shape by your function instead of the tape's.
  auto add_row = [](const Var& x, const Var& b) {
    const Shape bs = b.shape();
    return x.tape().record("add_row", {x, b}, x.value() + b.value(), [bs](const BackwardArgs& g) -> Grads {
      return {g.grad, gs::coursework::sum_to_shape(g.grad, bs)};
    }, Site::current());
  };
  test::require_gradcheck([&](const test::Vars& v) { return add_row(v[0], v[1]); },
                          {test::randn({3, 4}, 10), test::randn({4}, 11)});
}

}  // namespace check_ex2_sum_to_shape
