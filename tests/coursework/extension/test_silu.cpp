// The extension's checks: the op's value, its single tape entry, and its gradient against central
// finite differences, alone and inside a layer from gradscope::nn.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cmath>

#include <xtensor/xmath.hpp>

#include "engine/engine.hpp"
#include "engine/tools/gradcheck.hpp"
#include "nn/linear.hpp"
#include "silu.hpp"

using gs::Array;
using gs::Var;

namespace {
// Fixed inputs in (-4, 4) of the given shape (deterministic, no RNG needed).
Array inputs(const gs::Shape& shape, double phase) {
  Array a = Array::from_shape(shape);
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = 4.0 * std::sin(1.7 * static_cast<double>(i) + phase);
  return a;
}

void require_gradcheck(const gs::CheckedFunction& f, const std::vector<Array>& xs) {
  const gs::GradcheckResult r = gs::gradcheck(f, xs);
  INFO(r.report);
  REQUIRE(r.ok);
}
}  // namespace

TEST_CASE("silu is x * sigmoid(x), recorded as one tape entry", "[ext]") {
  gs::Tape tape;
  gs::TapeScope scope(tape);
  const Array a = inputs({3, 4}, 0.0);
  Var x = tape.leaf(a);
  Var y = ext::silu(x);
  REQUIRE(y.entry().op == std::string("silu"));
  REQUIRE(y.entry().inputs == std::vector<int>{x.index()});
  const double tol = gs::float32_build ? 1e-6 : 1e-14;  // float32: the two round differently
  REQUIRE(xt::allclose(y.value(), gs::mul(x, gs::sigmoid(x)).value(), tol, tol / 10));
}

TEST_CASE("silu's backward agrees with central finite differences", "[ext]") {
  require_gradcheck([](const std::vector<Var>& v) { return ext::silu(v[0]); }, {inputs({3, 4}, 0.3)});
}

TEST_CASE("silu inside a gradscope::nn linear layer passes a gradient check", "[ext]") {
  // y = silu(x W + b): x (5, 3), W (3, 2), b (2,)
  require_gradcheck([](const std::vector<Var>& v) { return ext::silu(gs::nn::linear_fused(v[0], v[1], v[2])); },
                    {inputs({5, 3}, 0.1), inputs({3, 2}, 0.7) * 0.5, inputs({2}, 1.1)});
}
