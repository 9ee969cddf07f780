// A gradient check over a module's parameters (and, optionally, plain inputs), for the nn tests.
// The engine's gs::gradcheck perturbs arrays that it turns into leaves; a layer's weights are
// Parameters instead, so this checker perturbs Parameter::value() in place, element by element, and
// compares the central difference (L(p + h) - L(p - h)) / 2h with what backward() added to
// Parameter::grad(). A non-scalar output y is checked through L = sum(y * w), w fixed random weights.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "check.hpp"
#include "engine/engine.hpp"
#include "nn/config.hpp"
#include "nn/module.hpp"

namespace gs::test {

// The smallest model that still has every part: V=5, T=3, d=4, 2 heads, d_ff=8, 2 layers, with the
// placement `spec` (a preset or a triple P/N/R, nn::apply_placement).
inline nn::ModelConfig gradcheck_config(const std::string& spec, nn::Init init = nn::Init::xavier) {
  nn::ModelConfig c;
  c.vocab = 5;
  c.context = 3;
  c.d_model = 4;
  c.heads = 2;
  c.d_ff = 8;
  c.layers = 2;
  nn::apply_placement(c, spec);
  c.init = init;
  c.seed = 1;
  return c;
}

// Every combination of the three axes that the model builds (nn::refusal() is empty), as canonical
// triples "P/N/R" (the presets among them by their preset names), in axis order.
inline std::vector<std::string> zoo() {
  std::vector<std::string> out;
  for (const nn::PlacementKind& p : nn::placement_kinds())
    for (const nn::NormKind& n : nn::norm_kinds())
      for (const nn::ResidualKind& r : nn::residual_kinds()) {
        nn::ModelConfig c;
        c.placement = p.placement;
        c.norm = n.norm;
        c.residual = r.residual;
        if (nn::refusal(c).empty()) out.push_back(nn::placement_name(c));
      }
  return out;
}

struct ParamCheckResult {
  bool ok = true;
  double max_abs_error = 0.0;
  std::size_t checked = 0;  // how many elements were perturbed
  std::string report;
};

// f maps leaves made from `inputs` (in order) to an output; it reads the parameters itself.
using ModuleFunction = std::function<Var(const std::vector<Var>&)>;

// Checks every element of every parameter (at most max_per_tensor elements of each, spread evenly)
// and every element of every input.
inline ParamCheckResult check_gradients(const std::vector<nn::NamedParameter>& params, const std::vector<Array>& inputs,
                                        const ModuleFunction& f, std::size_t max_per_tensor = 1000000,
                                        double h = GradcheckOptions{}.step,  // the build's: 1e-6 (f64), 2^-10 (f32)
                                        double abs_tol = GradcheckOptions{}.abs_tolerance,
                                        double rel_tol = GradcheckOptions{}.rel_tolerance) {
  std::vector<nn::NamedParameter> ps = params;
  std::vector<Array> xs = inputs;
  Array weights;
  bool weighted = false;

  // L(current values), and optionally the analytic gradients of the inputs and of the parameters.
  auto loss = [&](std::vector<Array>* input_grads) -> double {
    Tape tape;
    TapeScope scope(tape);
    std::vector<Var> leaves;
    for (const Array& x : xs) leaves.push_back(tape.leaf(x));
    Var y = f(leaves);
    if (!weighted && y.value().size() != 1) {
      std::mt19937_64 rng(12345);
      std::normal_distribution<double> normal(0.0, 1.0);
      weights = Array::from_shape(y.shape());
      for (Real& w : weights) w = normal(rng);
      weighted = true;
    }
    Var L = weighted ? sum(y * tape.constant(weights)) : y;
    if (input_grads) {
      L.backward();
      for (const Var& leaf : leaves)
        input_grads->push_back(leaf.entry().has_grad ? leaf.grad() : Array(xt::zeros_like(leaf.value())));
    }
    return L.value()();
  };

  for (nn::NamedParameter& p : ps) p.parameter.zero_grad();
  std::vector<Array> input_grads;
  loss(nullptr);  // fixes the weights
  loss(&input_grads);

  ParamCheckResult r;
  std::ostringstream worst;
  auto compare = [&](const std::string& what, std::size_t i, double analytic, double numeric) {
    const double err = std::abs(analytic - numeric);
    ++r.checked;
    if (err > abs_tol + rel_tol * std::abs(numeric)) {
      if (r.ok) worst << "first failure: " << what << "[" << i << "] analytic " << analytic << " numeric " << numeric;
      r.ok = false;
    }
    if (err >= r.max_abs_error) r.max_abs_error = err;
  };

  for (std::size_t k = 0; k < xs.size(); ++k)
    for (std::size_t i = 0; i < xs[k].size(); ++i) {
      const Real saved = xs[k].data()[i];
      const double numeric = central_difference([&](double v) {
        xs[k].data()[i] = static_cast<Real>(v);
        return loss(nullptr);
      }, saved, h);
      xs[k].data()[i] = saved;
      compare("input " + std::to_string(k), i, input_grads[k].data()[i], numeric);
    }

  for (nn::NamedParameter& p : ps) {
    const Array analytic = p.parameter.grad();
    const std::size_t n = p.parameter.size();
    const std::size_t stride = std::max<std::size_t>(1, n / std::min(n, max_per_tensor));
    for (std::size_t i = 0; i < n; i += stride) {
      const Real saved = p.parameter.value().data()[i];
      const double numeric = central_difference([&](double v) {
        p.parameter.value().data()[i] = static_cast<Real>(v);
        return loss(nullptr);
      }, saved, h);
      p.parameter.value().data()[i] = saved;
      compare(p.name, i, analytic.data()[i], numeric);
    }
  }
  std::ostringstream out;
  out << (r.ok ? "passed" : "FAILED") << ": " << r.checked << " elements, max abs error " << r.max_abs_error << "; "
      << worst.str();
  r.report = out.str();
  return r;
}

// Adds scale * N(0, 1) noise to every parameter, so that a check does not run at a special point
// (LN weight exactly 1, biases and ReZero scalars exactly 0).
inline void jitter(const std::vector<nn::NamedParameter>& params, double scale, unsigned seed) {
  unsigned s = seed;
  for (const nn::NamedParameter& p : params) {
    nn::NamedParameter q = p;
    q.parameter.value() += scale * randn(q.parameter.shape(), s++);
  }
}

}  // namespace gs::test

#define REQUIRE_PARAM_GRADCHECK(...)                         \
  do {                                                       \
    const auto pc_ = gs::test::check_gradients(__VA_ARGS__); \
    INFO(pc_.report);                                        \
    REQUIRE(pc_.ok);                                         \
  } while (0)
