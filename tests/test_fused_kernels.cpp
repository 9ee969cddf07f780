// The fused kernels against their plain formulations: values and gradients agree to 1e-12, and each
// fused op passes its own gradient check. (Fused and composite LayerNorm: tests/test_nn_norm.cpp.)
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>

#include <xtensor/xmath.hpp>

#include "check.hpp"
#include "engine/engine.hpp"
#include "engine/kernels/vector_math.hpp"
#include "nn/attention.hpp"
#include "nn/dyt.hpp"
#include "nn/layernorm.hpp"
#include "nn/linear.hpp"
#include "nn/rmsnorm.hpp"
#include "nn_gradcheck.hpp"

namespace test_fused_kernels {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;
using test::Vars;

namespace {

// The value of f and the gradients of L = sum(y * w_out) w.r.t. every input.
struct Result {
  Array y;
  std::vector<Array> grads;
};

Result run(const std::function<Var(const std::vector<Var>&)>& f, const std::vector<Array>& inputs, unsigned seed) {
  Tape tape;
  TapeScope scope(tape);
  std::vector<Var> leaves;
  for (const Array& a : inputs) leaves.push_back(tape.leaf(a));
  Var y = f(leaves);
  sum(y * tape.constant(test::randn(y.shape(), seed))).backward();
  Result r{y.value(), {}};
  for (const Var& l : leaves) r.grads.push_back(l.grad());
  return r;
}

double max_diff(const Array& a, const Array& b) {
  REQUIRE(shape_of(a) == shape_of(b));
  return a.size() == 0 ? 0.0 : xt::amax(xt::abs(a - b))();
}

void require_same(const Result& plain, const Result& fused) {
  REQUIRE(max_diff(plain.y, fused.y) <= test::tol(1e-12, 1e-5));
  REQUIRE(plain.grads.size() == fused.grads.size());
  for (std::size_t k = 0; k < plain.grads.size(); ++k) {
    INFO("gradient of input " << k);
    REQUIRE(max_diff(plain.grads[k], fused.grads[k]) <= test::tol(1e-12, 1e-5));
  }
}

}  // namespace

TEST_CASE("fused attention (weights + mix) and the composite agree in value and gradient", "[fused][attention]") {
  struct Case {
    std::size_t B, T, C, H;
  };
  for (const Case c : {Case{2, 5, 6, 3}, Case{1, 1, 4, 2}, Case{3, 7, 8, 1}, Case{2, 4, 8, 4}}) {
    INFO("B=" << c.B << " T=" << c.T << " C=" << c.C << " H=" << c.H);
    const std::vector<Array> qkv{test::randn({c.B, c.T, c.C}, 1), test::randn({c.B, c.T, c.C}, 2),
                                 test::randn({c.B, c.T, c.C}, 3)};
    const std::size_t H = c.H;
    const Result plain = run([H](const Vars& v) { return attention_composite(v[0], v[1], v[2], H); }, qkv, 9);
    const Result fused =
        run([H](const Vars& v) { return attention_fused(v[0], v[1], v[2], H); }, qkv, 9);
    require_same(plain, fused);

    // The weights alone: (B, H, T, T), rows summing to 1, the future exactly 0 in both.
    const std::vector<Array> qk{qkv[0], qkv[1]};
    const Array v_value = qkv[2];
    const Result wp = run([&](const Vars& v) {
      Var att;
      attention_composite(v[0], v[1], Tape::current().constant(v_value), H, &att);
      return att;
    }, qk, 10);
    const Result wf = run([H](const Vars& v) { return attention_weights_fused(v[0], v[1], H); }, qk, 10);
    REQUIRE(shape_of(wf.y) == Shape{c.B, c.H, c.T, c.T});
    require_same(wp, wf);
    for (std::size_t i = 0; i < c.T; ++i) {
      double row = 0.0;
      for (std::size_t j = 0; j < c.T; ++j) row += wf.y(0, 0, i, j);
      REQUIRE(row == Approx(1.0).epsilon(test::tol(1e-14, 1e-5)));
      for (std::size_t j = i + 1; j < c.T; ++j) REQUIRE(wf.y(0, 0, i, j) == 0.0);
    }
  }
}

TEST_CASE("the fused attention ops reject bad shapes, naming op, shapes and call site", "[fused][attention][errors]") {
  Tape tape;
  Var q = tape.leaf(test::randn({2, 3, 4}, 1)), k = tape.leaf(test::randn({2, 3, 6}, 2));
  REQUIRE_THROWS_WITH(attention_weights_fused(q, k, 2), Catch::Contains("attention_weights_fused") &&
                                                      Catch::Contains("(2, 3, 4)") && Catch::Contains("(2, 3, 6)") &&
                                                      Catch::Contains("test_fused_kernels.cpp"));
  REQUIRE_THROWS_WITH(attention_weights_fused(q, q, 3), Catch::Contains("divisible by heads = 3"));
  Var att = tape.leaf(test::randn({2, 2, 3, 2}, 3));
  REQUIRE_THROWS_WITH(attention_mix_fused(att, q, 2), Catch::Contains("attention_mix_fused") && Catch::Contains("(2, 2, 3, 2)"));
}

TEST_CASE("the fused attention ops pass gradient checks", "[fused][attention][gradcheck]") {
  test::require_gradcheck([](const Vars& v) { return attention_weights_fused(v[0], v[1], 2); },
                          {test::randn({2, 3, 4}, 1), test::randn({2, 3, 4}, 2)});
  test::require_gradcheck([](const Vars& v) { return attention_mix_fused(softmax(v[0], -1), v[1], 2); },
                          {test::randn({2, 2, 3, 3}, 3), test::randn({2, 3, 4}, 4)});
  // q and k the same Var: both gradients add up in it.
  test::require_gradcheck([](const Vars& v) { return attention_mix_fused(attention_weights_fused(v[0], v[0], 2), v[0], 2); },
                          {test::randn({1, 4, 4}, 5)});
}

TEST_CASE("the attention module gives the same output and parameter gradients fused or not", "[fused][attention]") {
  Initializer init(Init::xavier, 3);
  CausalSelfAttention attn(8, 2, init);
  test::jitter(attn.named_parameters(), 0.1, 20);
  const Array x = test::randn({2, 5, 8}, 4);
  auto grads_of = [&](bool fused) {
    attn.fused = fused;
    attn.zero_grad();
    Result r = run([&](const Vars& v) { return attn.forward(v[0]); }, {x}, 7);
    for (const NamedParameter& p : attn.named_parameters()) r.grads.push_back(p.parameter.grad());
    return r;
  };
  require_same(grads_of(false), grads_of(true));
  attn.fused = false;  // the composite path passes the parameter gradient check too
  REQUIRE_PARAM_GRADCHECK(attn.named_parameters(), {test::randn({2, 3, 8}, 5)},
                          [&](const std::vector<Var>& v) { return attn.forward(v[0]); });
}

TEST_CASE("the fused linear op and matmul + bias agree, and the fused op passes gradient checks", "[fused][linear]") {
  for (const Shape& xs : {Shape{5, 3}, Shape{2, 4, 3}, Shape{2, 1, 2, 3}, Shape{3}}) {
    INFO("x " << shape_str(xs));
    const std::vector<Array> in{test::randn(xs, 1), test::randn({3, 4}, 2), test::randn({4}, 3)};
    require_same(run([](const Vars& v) { return linear_composite(v[0], v[1], v[2]); }, in, 4),
                 run([](const Vars& v) { return linear_fused(v[0], v[1], v[2]); }, in, 4));
    test::require_gradcheck([](const Vars& v) { return linear_fused(v[0], v[1], v[2]); }, in);
  }
}

TEST_CASE("gelu's backward, which reads Phi(x) off the output as y / x, equals Phi(x) + x phi(x)", "[fused][gelu]") {
  // The plain formula, with erf: dy/dx = Phi(x) + x phi(x).
  auto plain = [](double x) {
    const double cdf = 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2));
    const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
    return cdf + x * pdf;
  };
  const Array x = Array(xt::xarray<double>{0.0, 1e-310, -1e-310, 1e-200, -3e-300, 0.3, -0.3, 1.0, -1.0, 2.5, -2.5, 6.0,
                                            -6.0, 9.0, -9.0, 40.0, -40.0});  // in float32, the tiny ones are 0
  Tape tape;
  Var v = tape.leaf(x);
  sum(gelu(v)).backward();
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x(i));
    REQUIRE(std::abs(v.grad()(i) - plain(x(i))) <= test::tol(1e-15, 1e-7) + test::tol(1e-13, 2e-7) * std::abs(plain(x(i))));
  }
  const Array r = 3.0 * test::randn({200}, 11);
  Var w = tape.leaf(r);
  sum(gelu(w)).backward();
  for (std::size_t i = 0; i < r.size(); ++i) REQUIRE(std::abs(w.grad()(i) - plain(r(i))) <= test::tol(1e-14, 3e-7));
}

TEST_CASE("gelu's fused forward gives the same bits as its plain xtensor formulation", "[fused][gelu]") {
  // Plain: x * 0.5 * (1 + erf(x / sqrt 2)) through xt::erf, which xsimd evaluates in pairs of doubles.
  // All three of erf's fits (|x / sqrt 2| below 0.65, below 2.2, above), its sign, 0, -0, denormals,
  // and values where e^(-x^2 / 2) underflows.
  // The double kernel, in either build.
  using F64 = xt::xarray<double>;
  F64 x = 4.0 * F64(test::randn({4000}, 5));
  const F64 special = {0.0, -0.0, 1e-310, -1e-310, 0.9, -0.9, 0.92, -0.92, 3.1, -3.1, 3.12, -3.12,
                         8.5, -8.5, 40.0, -40.0, 1e3, -1e3, 1e300, -1e300};
  std::copy(special.begin(), special.end(), x.begin());
  const F64 plain = x * 0.5 * (1.0 + xt::erf(x * (1.0 / std::numbers::sqrt2)));
  F64 fused = F64::from_shape(shape_of(x));
  kernels::gelu_forward(x.data(), fused.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x(i) << ", plain " << plain(i) << ", fused " << fused(i));
    if (std::isnan(plain(i))) {
      // xsimd's erf is NaN from |x| ~ 1e51 on (its polynomials overflow: inf / inf); the kernel returns
      // erf = +-1 from |x| = 6 on, so gelu(x) = x above and 0 below. Only 1e300 and -1e300 get here.
      REQUIRE(std::abs(x(i)) > 1e51);
      REQUIRE(fused(i) == (x(i) > 0.0 ? x(i) : 0.0));
      continue;
    }
    REQUIRE(std::bit_cast<std::uint64_t>(fused(i)) == std::bit_cast<std::uint64_t>(plain(i)));
  }
}

TEST_CASE("the kernel's erf and exp agree with the C library's", "[fused][gelu]") {
  const Array x = 3.0 * test::randn({5000}, 8);
  for (double a : x) {
    INFO("a = " << a);
    REQUIRE(std::abs(kernels::erf_like_xsimd(a) - std::erf(a)) <= 1e-14);  // measured: 8e-15 at most
    const double e = std::exp(-a * a);
    REQUIRE(std::abs(kernels::exp_like_xsimd(-a * a) - e) <= 4.5e-16 * e);  // two ulp; measured: one
  }
  REQUIRE(kernels::erf_like_xsimd(HUGE_VAL) == 1.0);
  REQUIRE(kernels::erf_like_xsimd(-HUGE_VAL) == -1.0);
  REQUIRE(kernels::exp_like_xsimd(-800.0) == 0.0);
  REQUIRE(kernels::exp_like_xsimd(800.0) == HUGE_VAL);
  REQUIRE(kernels::exp_like_xsimd(0.0) == 1.0);
}

TEST_CASE("the vectorised GELU backward and softmax exponentials give the bits of their scalar loops", "[fused][gelu]") {
  // The loops run in the clone for this CPU; the scalar functions are the same code, one element at a
  // time. Equal bits show that vectorising changed nothing.
  // The double kernels, in either build.
  using F64 = xt::xarray<double>;
  const F64 x = 4.0 * F64(test::randn({1001}, 6)), dy = test::randn({1001}, 7);
  F64 y = F64::from_shape({1001}), dx = F64::from_shape({1001});
  kernels::gelu_forward(x.data(), y.data(), x.size());
  kernels::gelu_backward(x.data(), y.data(), dy.data(), dx.data(), x.size());
  F64 e = x;
  kernels::exp_shifted(e.data(), e.size(), 1.5);
  const double inv_sqrt_2pi = 0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2;
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x(i));
    const double cdf = std::abs(x(i)) >= 1e-300 ? y(i) / x(i) : 0.5;
    const double scalar = dy(i) * (cdf + x(i) * (inv_sqrt_2pi * kernels::exp_like_xsimd(-0.5 * x(i) * x(i))));
    REQUIRE(std::bit_cast<std::uint64_t>(dx(i)) == std::bit_cast<std::uint64_t>(scalar));
    REQUIRE(std::bit_cast<std::uint64_t>(e(i)) == std::bit_cast<std::uint64_t>(kernels::exp_like_xsimd(x(i) - 1.5)));
  }
}

TEST_CASE("the float kernels give the double kernels' results rounded once to float", "[fused][gelu]") {
  // The float32 build's GELU and softmax exponentials: each element computed in double, stored as float.
  using F64 = xt::xarray<double>;
  using F32 = xt::xarray<float>;
  const F32 x = 4.0f * F32(test::randn({1001}, 6)), dy = test::randn({1001}, 7);
  F32 y = F32::from_shape({1001}), dx = F32::from_shape({1001}), e = x;
  kernels::gelu_forward(x.data(), y.data(), x.size());
  kernels::gelu_backward(x.data(), y.data(), dy.data(), dx.data(), x.size());
  kernels::exp_shifted(e.data(), e.size(), 1.5);
  const F64 xd = x, yd_from_float = y, dyd = dy;
  F64 yd = F64::from_shape({1001}), dxd = F64::from_shape({1001}), ed = xd;
  kernels::gelu_forward(xd.data(), yd.data(), xd.size());
  kernels::gelu_backward(xd.data(), yd_from_float.data(), dyd.data(), dxd.data(), xd.size());  // Phi from the float y
  kernels::exp_shifted(ed.data(), ed.size(), 1.5);
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x(i));
    REQUIRE(y(i) == static_cast<float>(yd(i)));
    REQUIRE(dx(i) == static_cast<float>(dxd(i)));
    REQUIRE(e(i) == static_cast<float>(ed(i)));
  }
}

TEST_CASE("each fused op's tape entry is its named forward and backward, bit for bit", "[fused][named]") {
  // The closure a fused op leaves on the tape calls its named backward (nn/*.hpp, engine/ops/reduce.hpp):
  // what the tape computes is exactly what the named pair computes on the same arrays.
  auto bits_equal = [](const Array& a, const Array& b) {
    REQUIRE(shape_of(a) == shape_of(b));
    for (std::size_t i = 0; i < a.size(); ++i)
      REQUIRE(std::bit_cast<test::RealBits>(a.data()[i]) == std::bit_cast<test::RealBits>(b.data()[i]));
  };
  const Array x = test::randn({2, 3, 4}, 1), w = test::randn({4}, 2), b = test::randn({4}, 3);
  const Array g = test::randn({2, 3, 4}, 4);
  const std::vector<bool> all{true, true, true};
  auto check = [&](const Vars& in, const Var& y, const Array& y_named, const Grads& g_named, const Array& seed) {
    y.backward(seed);
    bits_equal(y.value(), y_named);
    for (std::size_t k = 0; k < in.size(); ++k) {
      INFO("gradient of input " << k);
      bits_equal(in[k].grad(), g_named[k]);
    }
  };
  {
    Tape tape;
    Vars in{tape.leaf(x), tape.leaf(w), tape.leaf(b)};
    LayerNormStats stats;
    const Array y = layernorm_forward(x, w, b, 1e-5, stats);
    check(in, layernorm_fused(in[0], in[1], in[2]), y, layernorm_backward(g, x, w, stats), g);
  }
  {
    Tape tape;
    Vars in{tape.leaf(x), tape.leaf(w)};
    Array rstd;
    const Array y = rmsnorm_forward(x, w, 1e-5, rstd);
    check(in, rmsnorm_fused(in[0], in[1]), y, rmsnorm_backward(g, x, w, rstd), g);
  }
  {
    Tape tape;
    const Array a{0.8};
    Vars in{tape.leaf(x), tape.leaf(w), tape.leaf(b), tape.leaf(a)};
    check(in, dyt_fused(in[0], in[1], in[2], in[3]), dyt_forward(x, w, b, a), dyt_backward(g, x, w, a), g);
  }
  {
    Tape tape;
    const Array W = test::randn({4, 5}, 5), bias = test::randn({5}, 6), gy = test::randn({2, 3, 5}, 7);
    Vars in{tape.leaf(x), tape.leaf(W), tape.leaf(bias)};
    check(in, linear_fused(in[0], in[1], in[2]), linear_forward(x, W, bias), linear_backward(gy, x, W, all), gy);
  }
  {
    Tape tape;
    const Array q = test::randn({2, 5, 4}, 8), k = test::randn({2, 5, 4}, 9), ga = test::randn({2, 2, 5, 5}, 10);
    Vars in{tape.leaf(q), tape.leaf(k)};
    const Array att = attention_weights_forward(q, k, 2);
    check(in, attention_weights_fused(in[0], in[1], 2), att, attention_weights_backward(ga, att, q, k, 2, all), ga);
    Tape tape2;
    const Array v = test::randn({2, 5, 4}, 11), gv = test::randn({2, 5, 4}, 12);
    Vars mix{tape2.leaf(att), tape2.leaf(v)};
    check(mix, attention_mix_fused(mix[0], mix[1], 2), attention_mix_forward(att, v, 2),
          attention_mix_backward(gv, att, v, 2, all), gv);
  }
  {
    Tape tape;
    const Array z = test::randn({2, 3, 6}, 13);
    const IndexArray t = {{0, 5, 2}, {1, 1, 4}};
    Vars in{tape.leaf(z)};
    const Var loss = cross_entropy(in[0], t);
    check(in, loss, Array(cross_entropy_forward(z, t)), Grads{cross_entropy_backward(1.0, z, t)}, Array(1.0));
  }
}

TEST_CASE("the fused LayerNorm and RMSNorm keep the arithmetic order of docs/layernorm.md", "[fused][named]") {
  // The formulas as scalar loops in the order docs/layernorm.md writes them: the kernels give these bits.
  const Array x = 2.0 * test::randn({3, 5}, 14) + 0.5, w = test::randn({5}, 15), b = test::randn({5}, 16);
  const Array g = test::randn({3, 5}, 17);
  const double eps = 1e-5, n = 5.0;
  LayerNormStats stats;
  const Array y = layernorm_forward(x, w, b, eps, stats);
  const Grads grads = layernorm_backward(g, x, w, stats);
  Array rstd_rms;
  const Array y_rms = rmsnorm_forward(x, w, eps, rstd_rms);
  const Grads grads_rms = rmsnorm_backward(g, x, w, rstd_rms);
  for (std::size_t r = 0; r < 3; ++r) {
    double mu = 0.0, var = 0.0, ms = 0.0;
    for (std::size_t i = 0; i < 5; ++i) mu += x(r, i);
    mu /= n;
    for (std::size_t i = 0; i < 5; ++i) var += (x(r, i) - mu) * (x(r, i) - mu);
    var /= n;
    for (std::size_t i = 0; i < 5; ++i) ms += x(r, i) * x(r, i);
    ms /= n;
    const double rstd = 1.0 / std::sqrt(var + eps), rstd2 = 1.0 / std::sqrt(ms + eps);
    double mg = 0.0, mgx = 0.0, mgx2 = 0.0;
    for (std::size_t i = 0; i < 5; ++i) {
      mg += g(r, i) * w(i);
      mgx += g(r, i) * w(i) * ((x(r, i) - mu) * rstd);
      mgx2 += g(r, i) * w(i) * (x(r, i) * rstd2);
    }
    mg /= n;
    mgx /= n;
    mgx2 /= n;
    for (std::size_t i = 0; i < 5; ++i) {
      const double x_hat = (x(r, i) - mu) * rstd, x_hat2 = x(r, i) * rstd2;
      // (each element computed in double and rounded once to the build's Real)
      REQUIRE(y(r, i) == static_cast<Real>((x(r, i) - mu) * rstd * w(i) + b(i)));
      REQUIRE(grads[0](r, i) == Approx(rstd * (g(r, i) * w(i) - mg - x_hat * mgx)).epsilon(test::tol(0.0, 1e-6)));
      REQUIRE(y_rms(r, i) == static_cast<Real>(x(r, i) * rstd2 * w(i)));
      REQUIRE(grads_rms[0](r, i) == Approx(rstd2 * (g(r, i) * w(i) - x_hat2 * mgx2)).epsilon(test::tol(0.0, 1e-6)));
    }
  }
}

}  // namespace test_fused_kernels
