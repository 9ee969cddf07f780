// The README's "engine in a few lines": the block is read from README.md at configure time
// (tests/CMakeLists.txt), compiled and run here, so an edit of the README that breaks it fails this test.
#include <sstream>

#include "check.hpp"
#include "engine/engine.hpp"

namespace test_readme {  // one namespace per test file: the files compile in groups

using namespace gs;

TEST_CASE("the README example runs and its gradient is right", "[readme]") {
  std::ostringstream cout;  // stands in for std::cout
  Tape tape_of_this_test;
  TapeScope scope(tape_of_this_test);
  // README.md's block, cut out of it by tests/CMakeLists.txt (std::cout there is `cout` here):
#include "readme_example.inc"
  // d/dW sum(tanh(x W)) = x^T (1 - tanh(x W)^2)
  const double a = std::tanh(1.0 * 0.5 + 2.0 * 0.2), b = std::tanh(1.0 * -0.3 + 2.0 * 0.7);
  Array expected = {{1.0 * (1 - a * a), 1.0 * (1 - b * b)}, {2.0 * (1 - a * a), 2.0 * (1 - b * b)}};
  REQUIRE(xt::allclose(w.grad(), expected, 0.0, test::tol(1e-14, 1e-5)));
  REQUIRE(cout.str().find("matmul") != std::string::npos);
  REQUIRE(tape.size() == 0);
}

TEST_CASE("to_string prints arrays as nested braces", "[readme][array]") {
  REQUIRE(to_string(Array{{1.0, 2.0}, {3.0, 4.5}}) == "{{1, 2},\n {3, 4.5}}");
  REQUIRE(to_string(Array{1.0, -2.0}) == "{1, -2}");
  Array cube = Array::from_shape({2, 1, 2});
  cube.fill(0.5);
  REQUIRE(to_string(cube) == "{{{0.5, 0.5}},\n {{0.5, 0.5}}}");
  REQUIRE(to_string(Array(3.0)) == std::to_string(3.0));
  REQUIRE(to_string(Array::from_shape({0, 2})) == "{{}}");
  REQUIRE(to_string(Array{1.0, 2.0, 3.0}, 2) == "array of shape (3,), first values: 1 2 ...");
}

}  // namespace test_readme
