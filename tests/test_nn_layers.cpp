// The nn layers one at a time: initialisers, Linear, the embeddings, the MLP and causal attention.
#include <cmath>

#include <xtensor/xview.hpp>

#include "check.hpp"
#include "engine/engine.hpp"
#include "nn/attention.hpp"
#include "nn/embedding.hpp"
#include "nn/init.hpp"
#include "nn/linear.hpp"
#include "nn/mlp.hpp"
#include "nn_gradcheck.hpp"

namespace test_nn_layers {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;

TEST_CASE("initialisers are reproducible from the seed and have the right scale", "[nn][init]") {
  Initializer a(Init::xavier, 7), b(Init::xavier, 7), c(Init::xavier, 8);
  const Array wa = a.linear_weight(40, 60), wb = b.linear_weight(40, 60), wc = c.linear_weight(40, 60);
  REQUIRE(shape_of(wa) == Shape{40, 60});
  REQUIRE(wa == wb);
  REQUIRE(wa != wc);
  const double limit = std::sqrt(6.0 / 100.0);
  REQUIRE(xt::amax(xt::abs(wa))() <= limit);
  REQUIRE(xt::amax(xt::abs(wa))() > 0.9 * limit);
  // Var of U(-a, a) is a^2 / 3 = 2 / (in + out)
  REQUIRE(xt::mean(wa * wa)() == Approx(2.0 / 100.0).epsilon(0.1));

  std::mt19937_64 rng(3);
  const Array z = normal({20000}, 1.0, 0.5, rng);
  REQUIRE(xt::mean(z)() == Approx(1.0).margin(0.02));
  REQUIRE(std::sqrt(xt::mean((z - 1.0) * (z - 1.0))()) == Approx(0.5).epsilon(0.03));

  Initializer g(Init::gpt2, 1);
  const Array e = g.embedding(100, 50);
  REQUIRE(std::sqrt(xt::mean(e * e)()) == Approx(0.02).epsilon(0.05));
  REQUIRE((zeros({2, 3}) == Array(xt::zeros<Real>({2, 3}))));
  REQUIRE((ones({4}) == Array(xt::ones<Real>({4}))));
}

TEST_CASE("Linear computes x @ W + b over any leading axes and passes gradient checks", "[nn][linear]") {
  Initializer init(Init::xavier, 1);
  Linear lin(4, 3, init);
  REQUIRE(lin.weight.shape() == Shape{4, 3});
  REQUIRE(lin.bias.shape() == Shape{3});
  lin.bias.value() = test::randn({3}, 2);

  Tape tape;
  TapeScope scope(tape);
  const Array x = test::randn({2, 3, 4}, 3);
  Var y = lin.forward(tape.constant(x));
  REQUIRE(y.shape() == Shape{2, 3, 3});
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 3; ++t)
      for (std::size_t j = 0; j < 3; ++j) {
        double s = lin.bias.value()(j);
        for (std::size_t i = 0; i < 4; ++i) s += x(b, t, i) * lin.weight.value()(i, j);
        REQUIRE(y.value()(b, t, j) == Approx(s).epsilon(test::tol(1e-12, 1e-5)));
      }

  // With respect to x, W and b as plain leaves (the engine's checker) ...
  REQUIRE_GRADCHECK([](const std::vector<Var>& v) { return linear_fused(v[0], v[1], v[2]); },
                    (std::vector<Array>{x, test::randn({4, 3}, 4), test::randn({3}, 5)}));
  REQUIRE_GRADCHECK([](const std::vector<Var>& v) { return linear_fused(v[0], v[1], v[2]); },
                    (std::vector<Array>{test::randn({5, 4}, 6), test::randn({4, 3}, 4), test::randn({3}, 5)}));
  // ... and through the module's Parameters.
  REQUIRE_PARAM_GRADCHECK(lin.named_parameters(), {x}, [&](const std::vector<Var>& v) { return lin.forward(v[0]); });

  REQUIRE_THROWS_WITH(lin.forward(tape.constant(test::randn({2, 5}, 1))),
                      Catch::Contains("linear_fused at") && Catch::Contains("(2, 5)") && Catch::Contains("test_nn_layers.cpp"));
}

TEST_CASE("the embeddings look up rows and pass gradient checks", "[nn][embedding]") {
  Initializer init(Init::xavier, 1);
  Embedding tok(5, 4, init);
  PositionalEmbedding pos(3, 4, init);
  REQUIRE(tok.weight.shape() == Shape{5, 4});
  REQUIRE(pos.weight.shape() == Shape{3, 4});
  const IndexArray ids = {{0, 4, 4}, {2, 1, 0}};

  Tape tape;
  TapeScope scope(tape);
  Var e = tok.forward(ids);
  REQUIRE(e.shape() == Shape{2, 3, 4});
  REQUIRE((xt::view(e.value(), 1, 0) == xt::view(tok.weight.value(), 2)));
  Var p = pos.forward(2);
  REQUIRE(p.shape() == Shape{2, 4});
  REQUIRE((xt::view(p.value(), 1) == xt::view(pos.weight.value(), 1)));

  auto params = tok.named_parameters();
  for (auto& q : pos.named_parameters()) params.push_back(q);
  REQUIRE_PARAM_GRADCHECK(params, {}, [&](const std::vector<Var>&) {
    Var x = tok.forward(ids) + pos.forward(3);  // (B, T, d) + (T, d)
    return x * x;
  });

  REQUIRE_THROWS_WITH(tok.forward(IndexArray{0, 5}), Catch::Contains("Embedding at") && Catch::Contains("5"));
  REQUIRE_THROWS_WITH(pos.forward(4), Catch::Contains("PositionalEmbedding at") && Catch::Contains("4"));
}

TEST_CASE("the MLP is fc2(gelu(fc1(x))) and passes gradient checks", "[nn][mlp]") {
  Initializer init(Init::xavier, 2);
  MLP mlp(4, 8, init);
  test::jitter(mlp.named_parameters(), 0.1, 10);
  auto names = mlp.named_parameters();
  REQUIRE(names.size() == 4);
  REQUIRE(names[0].name == "fc1.weight");
  REQUIRE(names[0].parameter.shape() == Shape{4, 8});
  REQUIRE(names[3].name == "fc2.bias");
  REQUIRE(names[3].parameter.shape() == Shape{4});
  REQUIRE_PARAM_GRADCHECK(names, {test::randn({2, 3, 4}, 1)},
                          [&](const std::vector<Var>& v) { return mlp.forward(v[0]); });
}

TEST_CASE("causal self-attention passes gradient checks w.r.t. its input and parameters", "[nn][attention]") {
  Initializer init(Init::xavier, 3);
  CausalSelfAttention attn(4, 2, init);
  test::jitter(attn.named_parameters(), 0.1, 20);
  REQUIRE(attn.head_dim == 2);
  REQUIRE(attn.named_parameters().size() == 8);
  REQUIRE_PARAM_GRADCHECK(attn.named_parameters(), {test::randn({2, 3, 4}, 4)},
                          [&](const std::vector<Var>& v) { return attn.forward(v[0]); });
}

TEST_CASE("attention is causal: a later token does not change earlier outputs", "[nn][attention]") {
  Initializer init(Init::xavier, 5);
  CausalSelfAttention attn(6, 3, init);
  Tape tape;
  TapeScope scope(tape);
  Array x = test::randn({1, 4, 6}, 1);
  const Array y1 = attn.forward(tape.constant(x)).value();
  // The weights of the first position put everything on itself; rows sum to 1; the future is 0.
  const Array& att = attn.last_att.value();  // (B, H, T, T)
  for (std::size_t h = 0; h < 3; ++h) {
    REQUIRE(att(0, h, 0, 0) == 1.0);
    for (std::size_t i = 0; i < 4; ++i) {
      double s = 0.0;
      for (std::size_t j = 0; j < 4; ++j) {
        s += att(0, h, i, j);
        if (j > i) REQUIRE(att(0, h, i, j) == 0.0);
      }
      REQUIRE(s == Approx(1.0));
    }
  }
  xt::view(x, 0, 3) += 5.0;  // change the last position
  const Array y2 = attn.forward(tape.constant(x)).value();
  REQUIRE((xt::view(y1, 0, xt::range(0, 3)) == xt::view(y2, 0, xt::range(0, 3))));
  REQUIRE((xt::view(y1, 0, 3) != xt::view(y2, 0, 3)));

  // The gradient reaching x stays finite, and x[.., 3] gets none from outputs at positions < 3.
  Tape t2;
  TapeScope s2(t2);
  Var xl = t2.leaf(x);
  Var y = attn.forward(xl);
  Array seed = xt::zeros<Real>({1, 4, 6});
  xt::view(seed, 0, xt::range(0, 3)) = 1.0;
  y.backward(seed);
  REQUIRE(xt::all(xt::isfinite(xl.grad())));
  REQUIRE(xt::all(xt::equal(xt::view(xl.grad(), 0, 3), 0.0)));

  REQUIRE_THROWS_WITH(CausalSelfAttention(6, 4, init), Catch::Contains("divisible"));
  REQUIRE_THROWS_WITH(attn.forward(t2.constant(test::randn({4, 6}, 1))),
                      Catch::Contains("CausalSelfAttention at") && Catch::Contains("(4, 6)"));
}

}  // namespace test_nn_layers
