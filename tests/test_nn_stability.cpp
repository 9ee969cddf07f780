// The stability lab's model options against references written from their formulas in plain loops,
// and gradient-checked in double: QK-norm (per-head LayerNorm or RMSNorm of q and k), the placement
// `out` (x + N(F(x)), OLMo 2's order), the z-loss, and GI-Adam's second moment (v_0 = g^2, no bias
// correction of v) against steps worked out by hand.
#include <cmath>
#include <string>
#include <vector>

#include "check.hpp"
#include "engine/engine.hpp"
#include "nn/attention.hpp"
#include "nn/block.hpp"
#include "nn/layernorm.hpp"
#include "nn/optim.hpp"
#include "nn/rmsnorm.hpp"
#include "nn/transformer_lm.hpp"
#include "nn_gradcheck.hpp"

namespace test_nn_stability {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;

namespace {

const IndexArray ids = {{0, 3, 4}, {2, 2, 1}};
const IndexArray targets = {{3, 4, 0}, {2, 1, 1}};

// ---- references, one formula per loop ----

// y = x W + b over the last axis of x (B, T, in), W (in, out), b (out).
Array ref_linear(const Array& x, const Array& W, const Array& b) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], I = W.shape()[0], O = W.shape()[1];
  Array y = Array::from_shape({B, T, O});
  for (std::size_t i = 0; i < B; ++i)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t o = 0; o < O; ++o) {
        double s = b(o);
        for (std::size_t k = 0; k < I; ++k) s += x(i, t, k) * W(k, o);
        y(i, t, o) = s;
      }
  return y;
}

// The norm of n features starting at v[0]: LayerNorm (mu, biased var, eps 1e-5, * w + b) or RMSNorm
// (x / sqrt(mean x^2 + eps) * w; b unused), in place.
void ref_norm(Real* v, std::size_t n, bool layer, const Array& w, const Array& b) {
  double mu = 0.0, ms = 0.0;
  for (std::size_t i = 0; i < n; ++i) mu += v[i] / static_cast<double>(n);
  if (!layer) mu = 0.0;
  for (std::size_t i = 0; i < n; ++i) ms += (v[i] - mu) * (v[i] - mu) / static_cast<double>(n);
  const double r = 1.0 / std::sqrt(ms + 1e-5);
  for (std::size_t i = 0; i < n; ++i) v[i] = (v[i] - mu) * r * w(i) + (layer ? b(i) : 0.0);
}

// Causal attention with QK-norm written from the formulas: q, k, v = x W + b; each head's dh features
// of q and of k normalized (qk = none: left alone); s_ij = q_i . k_j / sqrt(dh) for j <= i; a = softmax;
// y_i = sum_j a_ij v_j; out = y Wo + bo.
Array ref_attention(const CausalSelfAttention& at, const Array& x, QkNorm qk) {
  Array q = ref_linear(x, at.q.weight.value(), at.q.bias.value());
  Array k = ref_linear(x, at.k.weight.value(), at.k.bias.value());
  const Array v = ref_linear(x, at.v.weight.value(), at.v.bias.value());
  const std::size_t B = x.shape()[0], T = x.shape()[1], H = at.heads, dh = at.head_dim;
  auto params = [](const NormLayer* n, bool bias) -> Array {
    if (const auto* ln = dynamic_cast<const LayerNorm*>(n)) return bias ? ln->bias.value() : ln->weight.value();
    const auto* rms = dynamic_cast<const RMSNorm*>(n);
    return bias ? Array(xt::zeros_like(rms->weight.value())) : rms->weight.value();
  };
  if (qk != QkNorm::none)
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t h = 0; h < H; ++h) {
          ref_norm(&q(b, t, h * dh), dh, qk == QkNorm::layer, params(at.q_norm.get(), false), params(at.q_norm.get(), true));
          ref_norm(&k(b, t, h * dh), dh, qk == QkNorm::layer, params(at.k_norm.get(), false), params(at.k_norm.get(), true));
        }
  Array y = xt::zeros<Real>({B, T, H * dh});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < T; ++i) {
        std::vector<double> s(i + 1);
        double m = -1e300, z = 0.0;
        for (std::size_t j = 0; j <= i; ++j) {
          double dot = 0.0;
          for (std::size_t f = 0; f < dh; ++f) dot += q(b, i, h * dh + f) * k(b, j, h * dh + f);
          s[j] = dot / std::sqrt(static_cast<double>(dh));
          m = std::max(m, s[j]);
        }
        for (std::size_t j = 0; j <= i; ++j) z += std::exp(s[j] - m);
        for (std::size_t j = 0; j <= i; ++j)
          for (std::size_t f = 0; f < dh; ++f) y(b, i, h * dh + f) += std::exp(s[j] - m) / z * v(b, j, h * dh + f);
      }
  return ref_linear(y, at.o.weight.value(), at.o.bias.value());
}

Array ref_layernorm(Array x, const LayerNorm& ln) {
  const std::size_t d = x.shape().back();
  for (std::size_t r = 0; r < x.size() / d; ++r) ref_norm(x.data() + r * d, d, true, ln.weight.value(), ln.bias.value());
  return x;
}

Array value_of(const Var& v) { return v.value(); }

}  // namespace

// ---- QK-norm ----

TEST_CASE("qk-norm adds one q and one k norm over d_head per block, weights 1 and biases 0, draws unchanged",
          "[nn][stability][qknorm]") {
  ModelConfig c = test::gradcheck_config("pre");
  c.qk_norm = QkNorm::layer;
  TransformerLM with(c);
  std::vector<std::string> names;
  for (const NamedParameter& p : with.named_parameters()) names.push_back(p.name);
  for (const char* n : {"blocks.0.attn.q_norm.weight", "blocks.0.attn.q_norm.bias", "blocks.1.attn.k_norm.weight",
                        "blocks.1.attn.k_norm.bias"})
    REQUIRE(std::find(names.begin(), names.end(), n) != names.end());
  const LayerNorm& qn = dynamic_cast<const LayerNorm&>(*with.blocks[0]->attn.q_norm);
  REQUIRE(qn.weight.shape() == Shape{2});  // d_head = 4 / 2
  REQUIRE((qn.weight.value() == Array(xt::ones<Real>({2}))));
  REQUIRE((qn.bias.value() == Array(xt::zeros<Real>({2}))));
  c.qk_norm = QkNorm::rms;
  TransformerLM rms(c);
  std::size_t count = 0;
  for (const NamedParameter& p : rms.named_parameters()) count += p.name.find("_norm.") != std::string::npos;
  REQUIRE(count == 4);  // q_norm.weight and k_norm.weight in each of 2 blocks: RMSNorm has no bias
  // Every other parameter has the values it has without qk-norm (the norms draw nothing).
  TransformerLM plain(test::gradcheck_config("pre"));
  for (const NamedParameter& p : plain.named_parameters())
    for (const NamedParameter& q : with.named_parameters())
      if (p.name == q.name) REQUIRE((p.parameter.value() == q.parameter.value()));
  REQUIRE(parse_qk_norm("rms") == QkNorm::rms);
  REQUIRE_THROWS_WITH(parse_qk_norm("batch"), "qk_norm: unknown qk_norm 'batch' (valid: none, layer, rms)");
}

TEST_CASE("attention with qk-norm equals its formula computed in plain loops", "[nn][stability][qknorm]") {
  for (QkNorm qk : {QkNorm::none, QkNorm::layer, QkNorm::rms})
    for (bool fused : {true, false}) {
      INFO(to_string(qk) << (fused ? " fused" : " composite"));
      Initializer init(Init::xavier, 3);
      CausalSelfAttention at(8, 2, init, qk);  // d_head 4
      at.fused = fused;
      test::jitter(at.named_parameters(), 0.3, 5);  // norm weights off 1, biases off 0
      Tape tape;
      TapeScope scope(tape);
      const Array x = test::randn({2, 5, 8}, 9);
      const Array y = at.forward(tape.leaf(x)).value();
      REQUIRE(xt::allclose(y, ref_attention(at, x, qk), test::tol(1e-12, 1e-4), test::tol(1e-13, 1e-5)));
    }
}

TEST_CASE("a block with qk-norm passes gradient checks w.r.t. its input and parameters", "[nn][stability][qknorm]") {
  for (const std::string member : {"pre", "post", "out", "peri/rms"})
    for (QkNorm qk : {QkNorm::layer, QkNorm::rms})
      for (bool fused : {true, false}) {
        INFO(member << " qk " << to_string(qk) << (fused ? " fused" : " composite"));
        ModelConfig c = test::gradcheck_config(member);
        c.qk_norm = qk;
        Initializer init(Init::xavier, 1);
        Block block(c, 0, init);
        block.set_fused_norms(fused);  // qk-norm's norms too
        REQUIRE(block.attn.q_norm->fused == fused);
        REQUIRE(block.attn.k_norm->fused == fused);
        block.attn.fused = fused;
        test::jitter(block.named_parameters(), 0.2, 7);
        REQUIRE_PARAM_GRADCHECK(block.named_parameters(), {test::randn({2, 3, 4}, 2)},
                                [&](const std::vector<Var>& v) { return block.forward(v[0]); });
      }
}

// ---- the placement out ----

TEST_CASE("out: h = x + N1(Attn(x)), y = h + N2(MLP(h)), a final norm, the norms named ln1 and ln2",
          "[nn][stability][out]") {
  Initializer init(Init::xavier, 4);
  Block block(test::gradcheck_config("out"), 1, init);
  test::jitter(block.named_parameters(), 0.2, 5);
  Tape tape;
  TapeScope scope(tape);
  const Array xa = test::randn({2, 3, 4}, 6);
  Var x = tape.leaf(xa);
  const Array y = block.forward(x).value();
  // The formula: the sublayers by their modules, the norms and the adds in plain loops.
  const LayerNorm& ln1 = dynamic_cast<const LayerNorm&>(*block.ln1);
  const LayerNorm& ln2 = dynamic_cast<const LayerNorm&>(*block.ln2);
  const Array attn = ref_attention(block.attn, xa, QkNorm::none);
  const Array h = xa + ref_layernorm(attn, ln1);
  const Array mlp = value_of(block.mlp.forward(tape.constant(h)));
  const Array expected = h + ref_layernorm(mlp, ln2);
  REQUIRE(xt::allclose(block.last.mid.value(), h, test::tol(1e-12, 1e-4), test::tol(1e-13, 1e-5)));
  REQUIRE(xt::allclose(y, expected, test::tol(1e-12, 1e-4), test::tol(1e-13, 1e-5)));
  // The skip is x itself: the stream is never normalized inside the blocks.
  REQUIRE(block.last.attn_skip.index() == x.index());
  REQUIRE(block.last.attn_in.index() == x.index());
  REQUIRE(TransformerLM(test::gradcheck_config("out")).has_final_norm());
  std::vector<std::string> names;
  for (const NamedParameter& p : block.named_parameters()) names.push_back(p.name);
  REQUIRE(names.front() == "attn.q.weight");  // out lists each norm after the sublayer it follows
  REQUIRE(std::find(names.begin(), names.end(), "ln1.weight") != names.end());
  REQUIRE(std::find(names.begin(), names.end(), "ln2.bias") != names.end());
  // With qk-norm it is OLMo 2's block; the residual kinds that make sense compose with it.
  for (const std::string ok : {"out/rms", "out/layer/rezero", "out/dyt/lns"}) {
    ModelConfig c;
    REQUIRE_NOTHROW(apply_placement(c, ok));
  }
}

TEST_CASE("a TransformerLM with out, qk-norm and z-loss passes a gradient check of every parameter",
          "[nn][stability][gradcheck]") {
  for (const std::string member : {"out", "out/rms", "pre"})
    for (QkNorm qk : {QkNorm::layer, QkNorm::rms}) {
      INFO(member << " qk " << to_string(qk));
      ModelConfig c = test::gradcheck_config(member);
      c.qk_norm = qk;
      TransformerLM model(c);
      model.z_loss = 0.3;  // large, so that its part of the gradient is not lost in the CE's
      test::jitter(model.named_parameters(), 0.2, 3);
      REQUIRE_PARAM_GRADCHECK(model.named_parameters(), {},
                              [&](const std::vector<Var>&) { return model.loss(ids, targets); });
    }
}

// ---- z-loss ----

TEST_CASE("z-loss: loss = mean CE + C mean (log Z)^2, last.ce the CE alone, from the logits in plain loops",
          "[nn][stability][zloss]") {
  TransformerLM model(test::gradcheck_config("pre"));
  test::jitter(model.named_parameters(), 0.5, 8);
  Tape tape;
  TapeScope scope(tape);
  const double plain = model.loss(ids, targets).value()();
  model.z_loss = 1e-2;
  const double loss = model.loss(ids, targets).value()();
  const Array z = model.last.logits.value();  // (2, 3, 5)
  double ce = 0.0, zz = 0.0;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 3; ++t) {
      double s = 0.0;
      for (std::size_t v = 0; v < 5; ++v) s += std::exp(z(b, t, v));
      const double log_z = std::log(s);
      REQUIRE(model.last.log_z.value()(b, t) == Approx(log_z).epsilon(test::tol(1e-14, 1e-5)));
      ce += (log_z - z(b, t, static_cast<std::size_t>(targets(b, t)))) / 6.0;
      zz += log_z * log_z / 6.0;
    }
  REQUIRE(model.last.ce.value()() == Approx(ce).epsilon(test::tol(1e-13, 1e-5)));
  REQUIRE(plain == Approx(ce).epsilon(test::tol(1e-13, 1e-5)));
  REQUIRE(loss == Approx(ce + 1e-2 * zz).epsilon(test::tol(1e-13, 1e-5)));
  REQUIRE(loss > ce);
}

TEST_CASE("log Z is stable for large logits and its gradient is the softmax", "[nn][stability][zloss]") {
  Tape tape;
  TapeScope scope(tape);
  Array a = {{{1000.0, 999.0, -5.0}}};  // e^1000 overflows; log Z = 1000 + log(1 + e^-1 + e^-1005)
  Var z = tape.leaf(a);
  Var lz = log_partition(z);
  REQUIRE(lz.value()(0, 0) == Approx(1000.0 + std::log(1.0 + std::exp(-1.0) + std::exp(-1005.0))).epsilon(test::tol(1e-15, 1e-5)));
  sum(lz).backward();
  const double e = std::exp(-1.0), s = 1.0 + e + std::exp(-1005.0);
  REQUIRE(z.grad()(0, 0, 0) == Approx(1.0 / s).epsilon(test::tol(1e-14, 1e-5)));
  REQUIRE(z.grad()(0, 0, 1) == Approx(e / s).epsilon(test::tol(1e-14, 1e-5)));
}

// ---- GI-Adam ----

namespace {

struct Two : Module {
  Parameter a;
  Two() { a = add_parameter("a", Array{1.0, -2.0}); }
};

}  // namespace

TEST_CASE("GI-Adam: v_0 = g^2 and v_hat = v, two steps by hand", "[nn][stability][giadam]") {
  // beta1 0.9, beta2 0.999, eps 1e-8, lr 0.01; g_1 = [0.3, -0.1], g_2 = [0.2, 0.4].
  // Step 1: v = g^2 = [0.09, 0.01], m = 0.1 g, m_hat = g: theta -= 0.01 g / (|g| + 1e-8)
  //         = [1 - 0.01 * 0.3 / 0.30000001, -2 + 0.01 * 0.1 / 0.10000001] = [0.9900000003333..., -1.990000001]
  // Step 2: m = 0.9 m + 0.1 g_2 = [0.047, 0.031], m_hat = m / 0.19;
  //         v = 0.999 v + 0.001 g_2^2 = [0.08995, 0.01015] (not divided by 1 - 0.999^2);
  //         theta -= 0.01 m_hat / (sqrt(v) + 1e-8) = [0.98175209517..., -2.00619478010...]
  Two two;
  AdamOptions o;
  o.v0_g0sq = true;
  Adam adam(two.named_parameters(), o);
  two.a.grad() = Array{0.3, -0.1};
  adam.step(0.01);
  REQUIRE(adam.slot(1, 0)(0) == Approx(0.09).epsilon(test::tol(1e-15, 1e-5)));
  REQUIRE(two.a.value()(0) == Approx(0.9900000003333334).epsilon(test::tol(1e-15, 1e-5)));
  REQUIRE(two.a.value()(1) == Approx(-1.99000000099999990).epsilon(test::tol(1e-15, 1e-5)));
  two.a.grad() = Array{0.2, 0.4};
  adam.step(0.01);
  REQUIRE(adam.slot(1, 0)(0) == Approx(0.08995).epsilon(test::tol(1e-14, 1e-5)));
  REQUIRE(adam.slot(1, 0)(1) == Approx(0.01015).epsilon(test::tol(1e-14, 1e-5)));
  REQUIRE(two.a.value()(0) == Approx(0.9817520951701136).epsilon(test::tol(1e-14, 1e-5)));
  REQUIRE(two.a.value()(1) == Approx(-2.0061947801046904).epsilon(test::tol(1e-14, 1e-5)));
  REQUIRE(xt::allclose(adam.preconditioner()[0], xt::sqrt(adam.slot(1, 0)) + 1e-8, test::tol(1e-15, 1e-6), 0.0));
  // Zero start: the same first step (both are lr g / |g|), another second one.
  Two zero;
  Adam plain(zero.named_parameters());
  zero.a.grad() = Array{0.3, -0.1};
  plain.step(0.01);
  REQUIRE(zero.a.value()(0) == Approx(0.9900000003333334).epsilon(test::tol(1e-12, 1e-5)));
  zero.a.grad() = Array{0.2, 0.4};
  plain.step(0.01);
  REQUIRE(std::abs(zero.a.value()(0) - two.a.value()(0)) > 1e-4);
  // The checkpoint records it (hyperparameters), the zero start as before.
  REQUIRE(adam.hyperparameters().back() == std::pair<std::string, double>{"v0_g0sq", 1.0});
  REQUIRE(plain.hyperparameters().size() == 4);
}

TEST_CASE("GI-Adam on AdamW and RAdam: the same start, against scalar references", "[nn][stability][giadam]") {
  const std::vector<double> g = {0.3, -0.2, 0.05, 0.4, -0.1, 0.2, 0.15, -0.3};
  // AdamW, decay 0.1: theta <- theta (1 - lr wd), then GI-Adam's moments.
  {
    Two two;
    auto opt = make_optimizer("adamw", two.named_parameters(), 0.1, 0.9, 0.99, 1e-8, true);
    double th = 1.0, m = 0.0, v = 0.0;
    for (std::size_t t = 1; t <= g.size(); ++t) {
      two.a.grad() = Array{g[t - 1], 0.0};
      opt->step(0.02);
      th *= 1.0 - 0.02 * 0.1;
      if (t == 1) v = g[0] * g[0];
      m = 0.9 * m + 0.1 * g[t - 1];
      v = 0.99 * v + 0.01 * g[t - 1] * g[t - 1];
      th -= 0.02 * (m / (1.0 - std::pow(0.9, static_cast<double>(t)))) / (std::sqrt(v) + 1e-8);
      REQUIRE(two.a.value()(0) == Approx(th).epsilon(test::tol(1e-14, 1e-5)));
    }
  }
  // RAdam, beta2 0.9 (rho_inf = 19: rho_t > 5 from t = 6 on, three rectified steps of eight): v_hat = v.
  {
    Two two;
    auto opt = make_optimizer("radam", two.named_parameters(), 0.0, 0.9, 0.9, 1e-8, true);
    double th = 1.0, m = 0.0, v = 0.0;
    std::size_t rectified = 0;
    for (std::size_t t = 1; t <= g.size(); ++t) {
      two.a.grad() = Array{g[t - 1], 0.0};
      opt->step(0.02);
      if (t == 1) v = g[0] * g[0];
      m = 0.9 * m + 0.1 * g[t - 1];
      v = 0.9 * v + 0.1 * g[t - 1] * g[t - 1];
      const double m_hat = m / (1.0 - std::pow(0.9, static_cast<double>(t)));
      const double r = RAdam::rectification(0.9, t);
      if (RAdam::rho(0.9, t) > 5.0) {
        th -= m_hat * 0.02 * (1.0 / (std::sqrt(v) + 1e-8)) * r;
        ++rectified;
      } else {
        th -= m_hat * 0.02;
      }
      REQUIRE(two.a.value()(0) == Approx(th).epsilon(test::tol(1e-14, 1e-5)));
    }
    REQUIRE(rectified > 2);
  }
  Two two;
  REQUIRE_THROWS_WITH(make_optimizer("sgd", two.named_parameters(), 0.0, 0.9, 0.99, 1e-8, true),
                      Catch::Contains("--adam-v0 g0sq") && Catch::Contains("sgd"));
}

}  // namespace test_nn_stability
