#include "engine/tools/gradcheck.hpp"

#include <cmath>
#include <random>
#include <sstream>

#include <xtensor/xrandom.hpp>

#include "engine/ops/elementwise.hpp"
#include "engine/ops/reduce.hpp"
#include "engine/tape.hpp"

namespace gs {
namespace {

// Runs f on `values` on a fresh tape and returns the scalar L (and, if asked, dL/d(each input)).
double evaluate(const CheckedFunction& f, const std::vector<Array>& values, const Array* weights,
                std::vector<Array>* grads) {
  Tape tape;
  TapeScope scope(tape);
  std::vector<Var> leaves;
  for (const Array& v : values) leaves.push_back(tape.leaf(v));
  Var y = f(leaves);
  Var loss = weights ? sum(y * tape.constant(*weights)) : y;
  if (grads) {
    loss.backward();
    for (const Var& leaf : leaves) grads->push_back(leaf.entry().has_grad ? leaf.grad() : xt::zeros_like(leaf.value()));
  }
  return loss.value()();
}

}  // namespace

double central_difference(const std::function<double(double)>& loss_at, double x, double h) {
  const double two_point = loss_at(x + h) - loss_at(x - h);
  if (!float32_build) return two_point / (2.0 * h);
  return (8.0 * two_point - (loss_at(x + 2.0 * h) - loss_at(x - 2.0 * h))) / (12.0 * h);
}

GradcheckResult gradcheck(const CheckedFunction& f, const std::vector<Array>& inputs, const GradcheckOptions& options) {
  // A non-scalar output gets fixed random weights so that L = sum(y * w) is a scalar.
  Array weights;
  bool weighted = false;
  {
    Tape probe;
    TapeScope scope(probe);
    std::vector<Var> leaves;
    for (const Array& v : inputs) leaves.push_back(probe.leaf(v));
    const Array& y = f(leaves).value();
    if (y.size() != 1) {
      xt::random::seed(options.seed);
      weights = xt::random::randn<double>(y.shape());
      weighted = true;
    }
  }

  std::vector<Array> analytic;
  evaluate(f, inputs, weighted ? &weights : nullptr, &analytic);

  GradcheckResult r;
  std::vector<Array> x = inputs;
  const double h = options.step;
  for (std::size_t k = 0; k < x.size(); ++k) {
    for (std::size_t i = 0; i < x[k].size(); ++i) {
      const Real saved = x[k].data()[i];
      const double numeric = central_difference([&](double v) {
        x[k].data()[i] = static_cast<Real>(v);
        return evaluate(f, x, weighted ? &weights : nullptr, nullptr);
      }, saved, h);
      x[k].data()[i] = saved;
      const double a = analytic[k].data()[i];
      const double abs_err = std::abs(a - numeric);
      const double rel_err = abs_err / std::max({std::abs(a), std::abs(numeric), 1e-12});
      if (abs_err > options.abs_tolerance + options.rel_tolerance * std::abs(numeric)) r.ok = false;
      r.max_rel_error = std::max(r.max_rel_error, rel_err);
      if (abs_err >= r.max_abs_error) {
        r.max_abs_error = abs_err;
        r.worst_input = k;
        r.worst_index = i;
        r.analytic = a;
        r.numeric = numeric;
      }
    }
  }
  std::ostringstream out;
  out << (r.ok ? "gradcheck passed" : "gradcheck FAILED") << ": max abs error " << r.max_abs_error
      << ", max rel error " << r.max_rel_error << "; worst at input " << r.worst_input << " element "
      << r.worst_index << " (analytic " << r.analytic << ", numeric " << r.numeric << "; tolerance abs "
      << options.abs_tolerance << " + rel " << options.rel_tolerance << ")";
  r.report = out.str();
  return r;
}

}  // namespace gs
