// The check of exercise 14, for the student: scripts/exercise 14 (docs/coursework.md#ex14)
#include <vector>

#include "analysis/hvp.hpp"
#include "ex14_hvp.hpp"
#include "exercise.hpp"
#include "engine/engine.hpp"
#include "nn/transformer_lm.hpp"

#ifndef GRADSCOPE_FLOAT32  // exercise 14's finite-difference Hessian-vector product is checked to float64's tolerance
namespace check_ex14_hvp {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::analysis;

namespace {

std::vector<Array> random_direction(const std::vector<Parameter>& params, unsigned seed) {
  std::vector<Array> v;
  for (const Parameter& p : params) v.push_back(test::randn(p.shape(), seed++));
  return v;
}

double dot(const std::vector<Array>& a, const std::vector<Array>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += xt::sum(a[i] * b[i])();
  return s;
}

}  // namespace

EXERCISE_CASE("ex14", "hvp: exact on a quadratic, whose Hessian is known") {
  // L = 1/2 theta^T A theta + b^T theta with A symmetric: H = A, so H v = A v (a quadratic's third
  // derivatives are 0: the central difference is exact up to rounding).
  const Array M = test::randn({4, 4}, 1);
  const Array A = M + xt::transpose(M), b = test::randn({4}, 2);
  Parameter theta(test::randn({4}, 3), "theta");
  Tape tape;
  TapeScope scope(tape);
  const LossFunction loss = [&] {
    Var t = reshape(Var(theta), {1, 4});
    return sum(matmul(t, Tape::current().constant(A)) * t) * 0.5 + sum(Var(theta) * Tape::current().constant(b));
  };
  const std::vector<Array> v = {test::randn({4}, 4)};
  const std::vector<Array> Hv = gs::coursework::hessian_vector_product(loss, {theta}, v);
  REQUIRE(Hv.size() == 1);
  Array expected = xt::zeros<Real>({4});
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 4; ++j) expected(i) += A(i, j) * v[0](j);
  REQUIRE_CLOSE(Hv[0], expected, test::tol(1e-6, 1e-4), test::tol(1e-8, 1e-5));
}

EXERCISE_CASE("ex14", "hvp: equals the engine's on a Post-LN and a Pre-LN model, and leaves the parameters as they were") {
  for (const char* placement : {"post", "pre"}) {
    INFO(placement);
    nn::TransformerLM model(coursework::small_config(placement, 2));
    std::vector<Parameter> params;
    for (const nn::NamedParameter& p : model.named_parameters()) params.push_back(p.parameter);
    std::vector<Array> before;
    for (const Parameter& p : params) before.push_back(p.value());
    const IndexArray ids{{1, 2, 3, 4}, {5, 6, 0, 1}}, targets{{2, 3, 4, 5}, {6, 0, 1, 2}};
    const LossFunction loss = [&] { return model.loss(ids, targets); };
    const std::vector<Array> v = random_direction(params, 5);
    Tape tape;
    TapeScope scope(tape);
    const std::vector<Array> yours = gs::coursework::hessian_vector_product(loss, params, v);
    for (std::size_t i = 0; i < params.size(); ++i) {
      INFO(model.named_parameters()[i].name << " changed");
      REQUIRE(xt::all(xt::equal(params[i].value(), before[i])));  // bit for bit
    }
    const std::vector<Array> engine = hvp(loss, params, v);
    REQUIRE(yours.size() == engine.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      INFO(model.named_parameters()[i].name);
      REQUIRE_CLOSE(yours[i], engine[i], test::tol(1e-6, 1e-4), test::tol(1e-8, 1e-5));
    }
  }
}

EXERCISE_CASE("ex14", "hvp: symmetric, u^T H v = v^T H u, as a Hessian is") {
  nn::TransformerLM model(coursework::small_config("post", 2));
  std::vector<Parameter> params;
  for (const nn::NamedParameter& p : model.named_parameters()) params.push_back(p.parameter);
  const IndexArray ids{{1, 2, 3, 4}}, targets{{2, 3, 4, 5}};
  const LossFunction loss = [&] { return model.loss(ids, targets); };
  const std::vector<Array> u = random_direction(params, 20), v = random_direction(params, 40);
  Tape tape;
  TapeScope scope(tape);
  const double uHv = dot(u, gs::coursework::hessian_vector_product(loss, params, v));
  const double vHu = dot(v, gs::coursework::hessian_vector_product(loss, params, u));
  INFO("u^T H v = " << uHv << ", v^T H u = " << vHu);
  REQUIRE(uHv == Approx(vHu).epsilon(test::tol(1e-5, 1e-2)));
}

}  // namespace check_ex14_hvp
#endif
