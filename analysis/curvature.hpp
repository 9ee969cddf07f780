// The curvature measurements that bench_curvature and sharpness share (docs/curvature.md): the
// parameters of a model, and of one of its blocks, as the Parameter handles the curvature tools take
// (analysis/hvp.hpp, eigen.hpp); the loss of a fixed batch as their LossFunction; and lambda_max of
// H and of Adam's P^-1/2 H P^-1/2 restricted to a scope of the model.
//
// A scope is a set of the model's parameters: "model" (all of them) or "block i" (the parameters named
// blocks.i.*). Restricted to a scope, H is the principal submatrix of the whole Hessian on those
// coordinates: the curvature the loss has along directions that move only that block. Its lambda_max is
// at most the whole model's (Cauchy's interlacing theorem), so the blocks show where the curvature sits.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/array.hpp"
#include "engine/parameter.hpp"
#include "analysis/eigen.hpp"
#include "analysis/hvp.hpp"
#include "nn/data/dataset.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::analysis {

// Every parameter of the model, in named_parameters() order (the order of Adam's preconditioner()).
std::vector<Parameter> parameter_handles(const nn::TransformerLM& model);

// The loss of `model` on the fixed `batch` (both must outlive the function).
LossFunction batch_loss(nn::TransformerLM& model, const nn::Batch& batch);

// A direction of N(0, 1) elements, one array per parameter, from `seed`.
std::vector<Array> random_direction(const std::vector<Parameter>& like, unsigned seed);

struct CurvatureScope {
  std::string name;                  // "model", "block 0", "block 1", ...
  std::vector<std::size_t> indices;  // positions in named_parameters() order
};

// "model", then "block 0" .. "block L-1".
std::vector<CurvatureScope> curvature_scopes(const nn::TransformerLM& model);

// The scope's entries of a per-parameter list (parameter handles, or Adam's preconditioner).
std::vector<Parameter> select(const std::vector<Parameter>& all, const CurvatureScope& scope);
std::vector<Array> select(const std::vector<Array>& all, const CurvatureScope& scope);

// lambda_max of H restricted to the scope, and of P^-1/2 H P^-1/2 with P = Adam::preconditioner()
// (one array per parameter of the whole model; the scope's entries are used).
CurvatureResult scope_lambda_max(const LossFunction& loss, const std::vector<Parameter>& all, const CurvatureScope& scope,
                                 const LanczosOptions& options);
CurvatureResult scope_preconditioned_lambda_max(const LossFunction& loss, const std::vector<Parameter>& all,
                                                const std::vector<Array>& preconditioner, const CurvatureScope& scope,
                                                const LanczosOptions& options);

// The thresholds of the edge of stability (Cohen et al. 2021, 2022): a step of gradient descent at
// rate lr on a quadratic with curvature lambda is stable while lr * lambda < 2; Adam's, with momentum
// beta1, while lr * lambda(P^-1/2 H P^-1/2) < (2 + 2 beta1) / (1 - beta1), 38 at beta1 = 0.9.
constexpr double sgd_threshold = 2.0;
double adam_threshold(double beta1);

}  // namespace gs::analysis
