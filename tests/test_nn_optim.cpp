// Optimizers against single steps worked out by hand in plain doubles, gradient clipping, and the
// learning-rate schedules at their key steps.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xbuilder.hpp>

#include "check.hpp"
#include "nn/optim.hpp"
#include "nn/schedule.hpp"

namespace test_nn_optim {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;

namespace {

// A 1x1 matrix ({{x}} alone is ambiguous between 1-D and 2-D).
Array mat(double x) {
  Array m = Array::from_shape({1, 1});
  m(0, 0) = x;
  return m;
}

// Two parameters: a = [1, -2] and b = [[0.5]].
struct Two : Module {
  Parameter a, b;
  Two() {
    a = add_parameter("a", Array{1.0, -2.0});
    b = add_parameter("b", mat(0.5));
  }
  void set_grads(const Array& ga, const Array& gb) {
    a.grad() = ga;
    b.grad() = gb;
  }
};

}  // namespace

TEST_CASE("SGD with momentum: two steps by hand", "[train][optim]") {
  Two m;
  Sgd sgd(m.named_parameters(), SgdOptions{0.9, 0.0});
  m.set_grads(Array{0.5, 1.0}, mat(-1.0));
  sgd.step(0.1);
  // v = g; theta = theta - 0.1 v
  REQUIRE(m.a.value()(0) == Approx(1.0 - 0.05));
  REQUIRE(m.a.value()(1) == Approx(-2.0 - 0.1));
  REQUIRE(m.b.value()(0, 0) == Approx(0.5 + 0.1));
  sgd.step(0.1);  // same gradient: v = 0.9 g + g = 1.9 g
  REQUIRE(m.a.value()(0) == Approx(0.95 - 0.1 * 1.9 * 0.5));
  REQUIRE(m.a.value()(1) == Approx(-2.1 - 0.1 * 1.9 * 1.0));
  REQUIRE(sgd.steps() == 2);
  REQUIRE(sgd.slot(0, 0)(1) == Approx(1.9));
}

TEST_CASE("a parameter's lr scale multiplies its step; 0 leaves it in place while Adam's moments move",
          "[train][optim]") {
  Two m;
  Sgd sgd(m.named_parameters(), SgdOptions{0.0, 0.0});
  sgd.set_lr_scale(0, 0.5);
  m.set_grads(Array{0.5, 1.0}, mat(-1.0));
  sgd.step(0.1);
  REQUIRE(m.a.value()(0) == Approx(1.0 - 0.5 * 0.1 * 0.5));
  REQUIRE(m.b.value()(0, 0) == Approx(0.5 + 0.1));  // scale 1 by default
  Two n;
  Adam adam(n.named_parameters());
  adam.set_lr_scale(1, 0.0);
  n.set_grads(Array{0.5, 1.0}, mat(-1.0));
  adam.step(0.1);
  REQUIRE(n.b.value()(0, 0) == 0.5);
  REQUIRE(adam.slot(0, 1)(0, 0) == Approx(0.1 * -1.0));  // m = (1 - b1) g all the same
  REQUIRE(n.a.value()(0) != 1.0);
  CHECK_THROWS(adam.set_lr_scale(2, 1.0));  // there is no parameter 2
}

TEST_CASE("SGD weight decay adds wd * theta to the gradient", "[train][optim]") {
  Two m;
  Sgd sgd(m.named_parameters(), SgdOptions{0.0, 0.1});
  m.set_grads(Array{0.5, 1.0}, mat(0.0));
  sgd.step(0.1);
  REQUIRE(m.a.value()(0) == Approx(1.0 - 0.1 * (0.5 + 0.1 * 1.0)));
  REQUIRE(m.a.value()(1) == Approx(-2.0 - 0.1 * (1.0 + 0.1 * -2.0)));
  REQUIRE(m.b.value()(0, 0) == Approx(0.5 - 0.1 * 0.1 * 0.5));
}

namespace {

// Adam in plain doubles for one scalar, step after step: the reference the tests compare against.
struct ScalarAdam {
  double b1, b2, eps, wd;
  bool decoupled;
  double m = 0, v = 0;
  int t = 0;
  double step(double theta, double g, double lr) {
    ++t;
    if (decoupled) theta -= lr * wd * theta;
    else g += wd * theta;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    const double m_hat = m / (1 - std::pow(b1, t)), v_hat = v / (1 - std::pow(b2, t));
    return theta - lr * m_hat / (std::sqrt(v_hat) + eps);
  }
};

}  // namespace

TEST_CASE("Adam: the first step moves every weight by about lr against its gradient's sign", "[train][optim]") {
  Two m;
  Adam adam(m.named_parameters());
  m.set_grads(Array{0.5, -3.0}, mat(1e-3));
  adam.step(0.01);
  // m_hat = g and v_hat = g^2 after one step, so the update is lr * g / (|g| + eps).
  REQUIRE(m.a.value()(0) == Approx(1.0 - 0.01 * 0.5 / (0.5 + 1e-8)).epsilon(test::tol(1e-14, 1e-5)));
  REQUIRE(m.a.value()(1) == Approx(-2.0 + 0.01 * 3.0 / (3.0 + 1e-8)).epsilon(test::tol(1e-14, 1e-5)));
  REQUIRE(m.b.value()(0, 0) == Approx(0.5 - 0.01 * 1e-3 / (1e-3 + 1e-8)).epsilon(test::tol(1e-14, 1e-5)));
  REQUIRE(adam.slot(0, 0)(1) == Approx(0.1 * -3.0));         // m = (1 - b1) g
  REQUIRE(adam.slot(1, 0)(1) == Approx(0.001 * 9.0));        // v = (1 - b2) g^2
}

TEST_CASE("Adam, Adam with L2 and AdamW agree with a scalar reference over three steps", "[train][optim]") {
  const double wd = 0.1, lr = 0.05;
  const double grads[3][2] = {{0.5, 1.0}, {-0.25, 2.0}, {0.75, -0.5}};
  for (int kind = 0; kind < 3; ++kind) {
    AdamOptions o;
    o.beta1 = 0.8;
    o.beta2 = 0.95;
    o.eps = 1e-6;
    o.weight_decay = kind == 0 ? 0.0 : wd;
    o.decoupled = kind == 2;
    Two m;
    Adam adam(m.named_parameters(), o);
    REQUIRE(adam.name() == (kind == 2 ? "adamw" : "adam"));
    ScalarAdam r0{o.beta1, o.beta2, o.eps, o.weight_decay, o.decoupled}, r1 = r0;
    double t0 = 1.0, t1 = -2.0;
    for (const auto& g : grads) {
      m.set_grads(Array{g[0], g[1]}, mat(0.0));
      adam.step(lr);
      t0 = r0.step(t0, g[0], lr);
      t1 = r1.step(t1, g[1], lr);
      INFO("kind " << kind);
      REQUIRE(m.a.value()(0) == Approx(t0).epsilon(test::tol(1e-13, 1e-5)));
      REQUIRE(m.a.value()(1) == Approx(t1).epsilon(test::tol(1e-13, 1e-5)));
    }
    REQUIRE(adam.steps() == 3);
  }
}

TEST_CASE("Adam's vectorised update gives the bits of the same formulas run one element at a time",
          "[train][optim]") {
  // optim.cpp is built with -fno-math-errno so that its loop runs in SIMD lanes. Every operation in
  // it (+, -, *, /, sqrt) is correctly rounded in a lane as in a scalar register, so the bits must
  // not change: this test repeats Adam::update's loop here, line for line, on 1001 elements (an odd
  // count, so the loop's scalar tail runs too), for Adam and AdamW.
  for (const bool decoupled : {false, true}) {
    struct One : Module {
      Parameter w;
      One() { w = add_parameter("w", test::randn({7, 143}, 3)); }
    } model;
    AdamOptions o;
    o.weight_decay = 0.1;
    o.decoupled = decoupled;
    Adam adam(model.named_parameters(), o);
    const double lr = 0.01;
    Array theta = model.w.value(), m = xt::zeros<Real>(theta.shape()), v = m;
    for (int t = 1; t <= 3; ++t) {
      const Array g = test::randn({7, 143}, 10 + static_cast<unsigned>(t));
      model.w.grad() = g;
      adam.step(lr);
      const double c1 = 1.0 - std::pow(o.beta1, t), c2 = 1.0 - std::pow(o.beta2, t);
      const double shrink = o.decoupled ? 1.0 - lr * o.weight_decay : 1.0;
      const double l2 = o.decoupled ? 0.0 : o.weight_decay;
      for (std::size_t i = 0; i < theta.size(); ++i) {
        theta.data()[i] *= shrink;
        const double gi = g.data()[i] + l2 * theta.data()[i];
        m.data()[i] = o.beta1 * m.data()[i] + (1.0 - o.beta1) * gi;
        v.data()[i] = o.beta2 * v.data()[i] + (1.0 - o.beta2) * gi * gi;
        theta.data()[i] -= lr * (m.data()[i] / c1) / (std::sqrt(v.data()[i] / c2) + o.eps);
      }
      INFO("decoupled " << decoupled << ", step " << t);
      REQUIRE(bool(model.w.value() == theta));  // == on arrays: every element, bit for bit
      REQUIRE(bool(adam.slot(1, 0) == v));
    }
  }
}

TEST_CASE("AdamW's decay is decoupled: with a zero gradient it only shrinks theta by lr * wd", "[train][optim]") {
  Two m;
  Adam adamw(m.named_parameters(), adamw_options(0.1));
  m.set_grads(Array{0.0, 0.0}, mat(0.0));
  adamw.step(0.5);
  REQUIRE(m.a.value()(0) == Approx(1.0 * (1 - 0.5 * 0.1)).epsilon(test::tol(1e-15, 1e-5)));
  REQUIRE(m.a.value()(1) == Approx(-2.0 * (1 - 0.5 * 0.1)).epsilon(test::tol(1e-15, 1e-5)));
}

TEST_CASE("optimizers skip frozen parameters, zero_grad clears gradients, make_optimizer checks names",
          "[train][optim]") {
  Two m;
  m.b.set_requires_grad(false);
  auto opt = make_optimizer("adamw", m.named_parameters(), 0.0);
  m.set_grads(Array{1.0, 1.0}, mat(1.0));
  opt->step(0.1);
  REQUIRE(m.b.value()(0, 0) == 0.5);
  REQUIRE(m.a.value()(0) != 1.0);
  opt->zero_grad();
  REQUIRE(m.a.grad()(0) == 0.0);
  REQUIRE(make_optimizer("sgd", m.named_parameters(), 0.0)->name() == "sgd");
  REQUIRE_THROWS_WITH(make_optimizer("lion", m.named_parameters(), 0.0), Catch::Contains("sgd, adam, adamw"));
}

TEST_CASE("clip_grad_norm scales to max_norm and returns the norm before clipping", "[train][optim][clip]") {
  Two m;
  m.set_grads(Array{3.0, 0.0}, mat(4.0));  // global norm 5
  REQUIRE(clip_grad_norm(m.named_parameters(), 10.0) == Approx(5.0));  // below: unchanged
  REQUIRE(m.a.grad()(0) == 3.0);
  REQUIRE(clip_grad_norm(m.named_parameters(), 0.0) == Approx(5.0));   // 0: off
  REQUIRE(clip_grad_norm(m.named_parameters(), 1.0) == Approx(5.0));
  REQUIRE(m.a.grad()(0) == Approx(0.6));
  REQUIRE(m.b.grad()(0, 0) == Approx(0.8));
  REQUIRE(clip_grad_norm(m.named_parameters(), 1.0) == Approx(1.0));
}

TEST_CASE("schedules at their key steps", "[train][schedule]") {
  // base 2, W = 10, N = 110; lr(step) is for update t = step + 1.
  Schedule s{ScheduleKind::constant, 2.0, 10, 110, 0.1};
  REQUIRE(s.lr(0) == 2.0);
  REQUIRE(s.lr(1000) == 2.0);

  s.kind = ScheduleKind::warmup;
  REQUIRE(s.lr(0) == Approx(0.2));   // t = 1: 2 * 1/10
  REQUIRE(s.lr(4) == Approx(1.0));   // t = 5
  REQUIRE(s.lr(9) == Approx(2.0));   // t = W: the peak
  REQUIRE(s.lr(500) == 2.0);

  s.kind = ScheduleKind::inverse_sqrt;
  REQUIRE(s.lr(0) == Approx(0.2));
  REQUIRE(s.lr(9) == Approx(2.0));
  REQUIRE(s.lr(39) == Approx(2.0 * std::sqrt(10.0 / 40.0)));  // t = 40: half the peak
  REQUIRE(s.lr(999) == Approx(2.0 * 0.1));                   // t = 1000

  s.kind = ScheduleKind::cosine;
  REQUIRE(s.lr(4) == Approx(1.0));
  REQUIRE(s.lr(9) == Approx(2.0));
  REQUIRE(s.lr(59) == Approx(2.0 * (0.1 + 0.9 * 0.5)));  // t = 60: half way, cos(pi/2) = 0
  REQUIRE(s.lr(109) == Approx(0.2));                     // t = N: f * base
  REQUIRE(s.lr(5000) == Approx(0.2));
  REQUIRE(s.lr(10) < s.lr(9));

  s.warmup = 0;
  s.kind = ScheduleKind::inverse_sqrt;
  REQUIRE(s.lr(3) == Approx(1.0));  // no warmup: base / sqrt(t), t = 4
  s.kind = ScheduleKind::cosine;
  REQUIRE(s.lr(0) == Approx(2.0 * (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI / 110.0)))));
}

TEST_CASE("schedules parse from their names", "[train][schedule]") {
  REQUIRE(parse_schedule("constant") == ScheduleKind::constant);
  REQUIRE(parse_schedule("warmup") == ScheduleKind::warmup);
  REQUIRE(parse_schedule("inverse_sqrt") == ScheduleKind::inverse_sqrt);
  REQUIRE(parse_schedule("rsqrt") == ScheduleKind::inverse_sqrt);
  REQUIRE(parse_schedule("cosine") == ScheduleKind::cosine);
  REQUIRE(to_string(ScheduleKind::inverse_sqrt) == "inverse_sqrt");
  REQUIRE_THROWS_WITH(parse_schedule("linear"), Catch::Contains("unknown schedule 'linear'"));
}

// ---- RAdam ----

namespace {

// RAdam in plain doubles for one scalar: PyTorch's torch.optim.RAdam step, line for line
// (optim.hpp has the formulas), the reference the tests compare against.
struct ScalarRAdam {
  double b1, b2, eps, wd;
  bool decoupled;
  double m = 0, v = 0;
  int t = 0;
  double step(double theta, double g, double lr) {
    ++t;
    const double c1 = 1 - std::pow(b1, t), c2 = 1 - std::pow(b2, t);
    if (decoupled) theta *= 1 - lr * wd;
    else g += wd * theta;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    const double m_hat = m / c1;
    const double rho_inf = 2 / (1 - b2) - 1;
    const double rho_t = rho_inf - 2 * t * std::pow(b2, t) / c2;
    if (rho_t <= 5) return theta - m_hat * lr;
    const double r = std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
    return theta - m_hat * lr * (std::sqrt(c2) / (std::sqrt(v) + eps)) * r;
  }
};

}  // namespace

TEST_CASE("RAdam: rho_t and the rectification r_t at beta2 = 0.999, by hand", "[train][optim][radam]") {
  // rho_inf = 2 / 0.001 - 1 = 1999;  rho_t = 1999 - 2 t 0.999^t / (1 - 0.999^t):
  //   t = 1: 1999 - 2 * 0.999 / 0.001 = 1;  t = 5: 4.99600;  t = 6: 5.99416 (the first above 5)
  //   r_6 = sqrt((5.99416 - 4)(5.99416 - 2) 1999 / (1995 * 1997 * 5.99416)) = 0.0258211
  REQUIRE(RAdam::rho(0.999, 1) == Approx(1.0).epsilon(1e-9));
  REQUIRE(RAdam::rho(0.999, 5) == Approx(4.995998000).epsilon(1e-9));
  REQUIRE(RAdam::rho(0.999, 6) == Approx(5.994163752).epsilon(1e-9));
  REQUIRE(RAdam::rectification(0.999, 5) == 0.0);
  REQUIRE(RAdam::rectification(0.999, 6) == Approx(0.02582111280).epsilon(1e-9));
  REQUIRE(RAdam::rectification(0.999, 100000) == Approx(1.0).epsilon(1e-6));  // r_t -> 1 as t grows
}

TEST_CASE("RAdam: six steps by hand, five of momentum on m_hat, then the first rectified one", "[train][optim][radam]") {
  // theta = 1, a constant gradient g = 2, lr 0.1, PyTorch's defaults (0.9, 0.999, 1e-8, no decay).
  // With a constant g, m_hat = g and v = (1 - 0.999^t) g^2.
  //   t = 1..5 (rho_t <= 5): theta <- theta - 0.1 * 2, so 0.8, 0.6, 0.4, 0.2, 0
  //   t = 6: theta <- 0 - 0.1 * 2 * r_6 * sqrt(1 - 0.999^6) / (sqrt(1 - 0.999^6) * 2 + 1e-8)
  //              = -0.1 * r_6 * 2 / (2 + 1e-8 / 0.0773629) = -0.00258211111
  struct One : Module {
    Parameter w;
    One() { w = add_parameter("w", Array{1.0}); }
  } model;
  RAdam radam(model.named_parameters());
  const double after[5] = {0.8, 0.6, 0.4, 0.2, 0.0};
  for (int t = 0; t < 5; ++t) {
    model.w.grad() = Array{2.0};
    radam.step(0.1);
    REQUIRE(model.w.value()(0) == Approx(after[t]).margin(test::tol(1e-15, 1e-5)));
  }
  model.w.grad() = Array{2.0};
  radam.step(0.1);
  REQUIRE(model.w.value()(0) == Approx(-0.00258211111).margin(test::tol(1e-12, 1e-5)));
  REQUIRE(radam.name() == "radam");
}

TEST_CASE("RAdam agrees bit for bit with a scalar reference over ten steps, with and without weight decay",
          "[train][optim][radam]") {
  // Ten steps cross rho_t = 5 at step 6 (beta2 0.999). Vectorised (1001 elements, an odd count) and
  // scalar evaluation of the same +, -, *, /, sqrt round the same way: every bit agrees.
  for (int kind = 0; kind < 3; ++kind) {
    RAdamOptions o;
    o.weight_decay = kind == 0 ? 0.0 : 0.1;
    o.decoupled = kind == 2;
    struct One : Module {
      Parameter w;
      One() { w = add_parameter("w", test::randn({7, 143}, 4)); }
    } model;
    RAdam radam(model.named_parameters(), o);
    std::vector<ScalarRAdam> reference(model.w.size(), ScalarRAdam{o.beta1, o.beta2, o.eps, o.weight_decay, o.decoupled});
    Array theta = model.w.value();
    for (int t = 1; t <= 10; ++t) {
      const Array g = test::randn({7, 143}, 20 + static_cast<unsigned>(t));
      const double lr = 0.01 * t;
      model.w.grad() = g;
      radam.step(lr);
      for (std::size_t i = 0; i < theta.size(); ++i) theta.data()[i] = reference[i].step(theta.data()[i], g.data()[i], lr);
      INFO("kind " << kind << ", step " << t);
      // float32 keeps m and v as floats, the reference in double: equal to float precision only.
      if constexpr (float32_build) REQUIRE(xt::allclose(model.w.value(), theta, 1e-5, 1e-7));
      else REQUIRE(bool(model.w.value() == theta));
    }
  }
}

TEST_CASE("make_optimizer makes radam, takes Adam's hyperparameters and checks them", "[train][optim][radam]") {
  Two m;
  auto radam = make_optimizer("radam", m.named_parameters(), 0.0);
  REQUIRE(radam->name() == "radam");
  auto adam = make_optimizer("adam", m.named_parameters(), 0.01, 0.8, 0.98, 1e-6);
  const std::vector<std::pair<std::string, double>> expected{
      {"beta1", 0.8}, {"beta2", 0.98}, {"eps", 1e-6}, {"weight_decay", 0.01}};
  REQUIRE(adam->hyperparameters() == expected);
  REQUIRE(make_optimizer("adamw", m.named_parameters(), 0.01, 0.8, 0.98, 1e-6)->hyperparameters() == expected);
  REQUIRE(make_optimizer("radam", m.named_parameters(), 0.01, 0.8, 0.98, 1e-6)->hyperparameters() == expected);
  REQUIRE(make_optimizer("radam", m.named_parameters(), 0.0)->hyperparameters()[1].second == 0.999);  // PyTorch's
  const std::vector<std::pair<std::string, double>> sgd{{"momentum", 0.9}, {"weight_decay", 0.5}};
  REQUIRE(make_optimizer("sgd", m.named_parameters(), 0.5)->hyperparameters() == sgd);
  REQUIRE_THROWS_WITH(make_optimizer("adam", m.named_parameters(), 0.0, 1.0, 0.98, 1e-8), Catch::Contains("beta1 = 1"));
  REQUIRE_THROWS_WITH(make_optimizer("radam", m.named_parameters(), 0.0, 0.9, -0.1, 1e-8), Catch::Contains("beta2"));
  REQUIRE_THROWS_WITH(make_optimizer("adamw", m.named_parameters(), 0.0, 0.9, 0.98, 0.0), Catch::Contains("eps"));
  REQUIRE_THROWS_WITH(make_optimizer("lion", m.named_parameters(), 0.0), Catch::Contains("radam"));
}

// ---- the hold ----

TEST_CASE("a hold: lr is 0 for the first H steps, then the plain schedule shifted by H", "[train][schedule][hold]") {
  for (const ScheduleKind kind :
       {ScheduleKind::constant, ScheduleKind::warmup, ScheduleKind::inverse_sqrt, ScheduleKind::cosine}) {
    const Schedule plain{kind, 2.0, 10, 110, 0.1};
    Schedule held = plain;
    held.hold = 7;
    INFO(to_string(kind));
    for (std::size_t step = 0; step < 7; ++step) REQUIRE(held.lr(step) == 0.0);
    for (std::size_t step = 7; step < 300; ++step) REQUIRE(held.lr(step) == plain.lr(step - 7));
    REQUIRE(held.lr(7) == plain.lr(0));  // the warmup starts after the hold: base / W, not 0
  }
}

TEST_CASE("during a hold Adam's moments move and the weights do not, with or without decoupled decay",
          "[train][optim][hold]") {
  Schedule s{ScheduleKind::warmup, 0.1, 3, 0, 0.1};
  s.hold = 4;
  for (const char* name : {"adam", "adamw", "radam", "sgd"}) {
    INFO(name);
    Two m;
    auto opt = make_optimizer(name, m.named_parameters(), 0.1);
    const Array a0 = m.a.value(), b0 = m.b.value();
    for (std::size_t step = 0; step < 4; ++step) {
      m.set_grads(Array{0.5 + step, -1.0}, mat(2.0));
      opt->step(s.lr(step));
      REQUIRE(bool(m.a.value() == a0));  // lr 0: no update, and AdamW's lr * wd * theta is 0 too
      REQUIRE(bool(m.b.value() == b0));
    }
    REQUIRE(opt->steps() == 4);             // the optimizer counted the held steps (bias correction)
    REQUIRE(opt->slot(0, 0)(0) != 0.0);     // its state (Adam's m, SGD's momentum) moved
    if (std::string(name) != "sgd") REQUIRE(opt->slot(1, 0)(0) > 0.0);  // and Adam's v
    m.set_grads(Array{0.5, -1.0}, mat(2.0));
    opt->step(s.lr(4));                     // the first step after the hold: lr = 0.1 / 3
    REQUIRE(s.lr(4) == Approx(0.1 / 3));
    REQUIRE(m.a.value()(0) != a0(0));
  }
}

}  // namespace test_nn_optim
