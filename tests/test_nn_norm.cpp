// LayerNorm, RMSNorm and DyT: composite (engine ops) and fused (hand-written backward) agree, and both
// pass gradient checks w.r.t. x and every parameter.
#include <xtensor/xview.hpp>

#include "check.hpp"
#include "engine/engine.hpp"
#include "nn/dyt.hpp"
#include "nn/layernorm.hpp"
#include "nn/rmsnorm.hpp"
#include "nn_gradcheck.hpp"

namespace test_nn_norm {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;

namespace {

// Value and the gradients of L = sum(y * w_out) w.r.t. every input, for one form.
struct Result {
  Array y;
  std::vector<Array> grads;
};

Result run(const std::function<Var(const std::vector<Var>&)>& f, const std::vector<Array>& inputs, const Array& w_out) {
  Tape tape;
  TapeScope scope(tape);
  std::vector<Var> leaves;
  for (const Array& a : inputs) leaves.push_back(tape.leaf(a));
  Var y = f(leaves);
  sum(y * tape.constant(w_out)).backward();
  Result r{y.value(), {}};
  for (const Var& l : leaves) r.grads.push_back(l.grad());
  return r;
}

double max_diff(const Array& a, const Array& b) { return xt::amax(xt::abs(a - b))(); }

}  // namespace

TEST_CASE("fused and composite LayerNorm agree to 1e-12 in value and gradient", "[nn][layernorm]") {
  const Array x = 3.0 * test::randn({2, 3, 4}, 1) + 1.5;
  const Array w = test::randn({4}, 2), b = test::randn({4}, 3), g = test::randn({2, 3, 4}, 4);
  const std::vector<Array> in{x, w, b};
  const Result c = run([](const std::vector<Var>& v) { return layernorm_composite(v[0], v[1], v[2]); }, in, g);
  const Result f = run([](const std::vector<Var>& v) { return layernorm_fused(v[0], v[1], v[2]); }, in, g);
  REQUIRE(max_diff(c.y, f.y) <= test::tol(1e-12, 1e-5));
  for (std::size_t k = 0; k < 3; ++k) REQUIRE(max_diff(c.grads[k], f.grads[k]) <= test::tol(1e-12, 1e-5));

  // The normalized rows have mean 0 and biased variance var / (var + eps) at weight 1, bias 0.
  Tape tape;
  TapeScope scope(tape);
  Var y = layernorm_fused(tape.constant(x), tape.constant(xt::ones<Real>({4})), tape.constant(xt::zeros<Real>({4})));
  const Real* rows = y.value().data();  // 6 rows of 4
  for (std::size_t r = 0; r < 6; ++r) {
    double mean = 0.0, square = 0.0;
    for (std::size_t i = 0; i < 4; ++i) {
      mean += rows[r * 4 + i] / 4.0;
      square += rows[r * 4 + i] * rows[r * 4 + i] / 4.0;
    }
    REQUIRE(std::abs(mean) < test::tol(1e-12, 1e-5));
    REQUIRE(square == Approx(1.0).margin(1e-4));
  }
}

TEST_CASE("both LayerNorms pass gradient checks w.r.t. x, weight and bias", "[nn][layernorm]") {
  const std::vector<Array> in{test::randn({2, 3, 4}, 5), test::randn({4}, 6), test::randn({4}, 7)};
  REQUIRE_GRADCHECK([](const std::vector<Var>& v) { return layernorm_fused(v[0], v[1], v[2]); }, in);
  REQUIRE_GRADCHECK([](const std::vector<Var>& v) { return layernorm_composite(v[0], v[1], v[2]); }, in);
}

TEST_CASE("the LayerNorm module: ones and zeros, one tape entry when fused, shape errors", "[nn][layernorm]") {
  LayerNorm ln(4);
  REQUIRE(ln.fused);
  REQUIRE((ln.weight.value() == Array(xt::ones<Real>({4}))));
  REQUIRE((ln.bias.value() == Array(xt::zeros<Real>({4}))));
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.leaf(test::randn({3, 4}, 1));
  const std::size_t before = tape.size();
  Var y = ln.forward(x);
  REQUIRE(std::string(y.entry().op) == "layernorm_fused");
  REQUIRE(tape.size() == before + 3);  // the two parameter leaves and the op
  ln.fused = false;
  Var z = ln.forward(x);
  REQUIRE(std::string(z.entry().op) != "layernorm_fused");
  REQUIRE(tape.size() > before + 8);
  REQUIRE(max_diff(y.value(), z.value()) <= test::tol(1e-12, 1e-5));

  ln.fused = true;
  test::jitter(ln.named_parameters(), 0.3, 3);
  REQUIRE_PARAM_GRADCHECK(ln.named_parameters(), {test::randn({2, 3, 4}, 8)},
                          [&](const std::vector<Var>& v) { return ln.forward(v[0]); });
  REQUIRE_THROWS_WITH(ln.forward(tape.constant(test::randn({2, 5}, 1))),
                      Catch::Contains("layernorm_fused at") && Catch::Contains("(2, 5)"));
}

TEST_CASE("fused and composite RMSNorm agree to 1e-12 and pass gradient checks", "[nn][rmsnorm]") {
  const Array x = 2.0 * test::randn({2, 3, 4}, 11) + 0.5;
  const Array w = test::randn({4}, 12), g = test::randn({2, 3, 4}, 13);
  const std::vector<Array> in{x, w};
  const Result c = run([](const std::vector<Var>& v) { return rmsnorm_composite(v[0], v[1]); }, in, g);
  const Result f = run([](const std::vector<Var>& v) { return rmsnorm_fused(v[0], v[1]); }, in, g);
  REQUIRE(max_diff(c.y, f.y) <= test::tol(1e-12, 1e-5));
  for (std::size_t k = 0; k < 2; ++k) REQUIRE(max_diff(c.grads[k], f.grads[k]) <= test::tol(1e-12, 1e-5));
  REQUIRE_GRADCHECK([](const std::vector<Var>& v) { return rmsnorm_fused(v[0], v[1]); }, in);
  REQUIRE_GRADCHECK([](const std::vector<Var>& v) { return rmsnorm_composite(v[0], v[1]); }, in);

  RMSNorm rms(4);
  REQUIRE(rms.named_parameters().size() == 1);
  test::jitter(rms.named_parameters(), 0.3, 4);
  for (bool fused : {true, false}) {
    rms.fused = fused;
    REQUIRE_PARAM_GRADCHECK(rms.named_parameters(), {x}, [&](const std::vector<Var>& v) { return rms.forward(v[0]); });
  }
}

TEST_CASE("fused and composite DyT agree to 1e-12 and pass gradient checks", "[nn][dyt]") {
  const Array x = 2.0 * test::randn({2, 3, 4}, 21) + 0.3;
  const Array w = test::randn({4}, 22), b = test::randn({4}, 23), a = Array{0.7}, g = test::randn({2, 3, 4}, 24);
  const std::vector<Array> in{x, w, b, a};
  const Result c = run([](const std::vector<Var>& v) { return dyt_composite(v[0], v[1], v[2], v[3]); }, in, g);
  const Result f = run([](const std::vector<Var>& v) { return dyt_fused(v[0], v[1], v[2], v[3]); }, in, g);
  REQUIRE(max_diff(c.y, f.y) <= test::tol(1e-12, 1e-5));
  for (std::size_t k = 0; k < 4; ++k) {
    INFO("gradient of input " << k);
    REQUIRE(max_diff(c.grads[k], f.grads[k]) <= test::tol(1e-12, 1e-5));
  }
  REQUIRE_GRADCHECK([](const std::vector<Var>& v) { return dyt_fused(v[0], v[1], v[2], v[3]); }, in);
  REQUIRE_GRADCHECK([](const std::vector<Var>& v) { return dyt_composite(v[0], v[1], v[2], v[3]); }, in);
  // The value is gamma * tanh(alpha x) + beta, element by element.
  for (std::size_t i = 0; i < x.size(); ++i)
    REQUIRE(f.y.data()[i] == Approx(std::tanh(0.7 * x.data()[i]) * w(i % 4) + b(i % 4)).epsilon(test::tol(1e-15, 1e-5)));
}

TEST_CASE("the DyT module: weight ones, bias zeros, alpha [1], one tape entry when fused, shape errors", "[nn][dyt]") {
  DyT dyt(4, 0.5);
  const auto named = dyt.named_parameters();
  REQUIRE(named.size() == 3);
  REQUIRE(named[0].name == "weight");
  REQUIRE(named[1].name == "bias");
  REQUIRE(named[2].name == "alpha");
  REQUIRE(dyt.alpha.shape() == Shape{1});
  REQUIRE(dyt.alpha.value()(0) == 0.5);
  REQUIRE((dyt.weight.value() == Array(xt::ones<Real>({4}))));
  REQUIRE((dyt.bias.value() == Array(xt::zeros<Real>({4}))));
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.leaf(test::randn({3, 4}, 1));
  const std::size_t before = tape.size();
  Var y = dyt.forward(x);
  REQUIRE(std::string(y.entry().op) == "dyt_fused");
  REQUIRE(tape.size() == before + 4);  // three parameter leaves and the op
  REQUIRE(xt::allclose(y.value(), xt::tanh(0.5 * x.value()), test::tol(1e-15, 1e-6), 0.0));
  test::jitter(dyt.named_parameters(), 0.3, 5);
  for (bool fused : {true, false}) {
    dyt.fused = fused;
    REQUIRE_PARAM_GRADCHECK(dyt.named_parameters(), {test::randn({2, 3, 4}, 6)},
                            [&](const std::vector<Var>& v) { return dyt.forward(v[0]); });
  }
  dyt.fused = true;
  REQUIRE_THROWS_WITH(dyt.forward(tape.constant(test::randn({2, 5}, 1))),
                      Catch::Contains("dyt_fused at") && Catch::Contains("(2, 5)"));
  dyt.backward_mode.undo_gain = true;
  REQUIRE_THROWS_WITH(dyt.forward(x), Catch::Contains("DyT") && Catch::Contains("statistics"));
}

}  // namespace test_nn_norm
