#include "analysis/curvature.hpp"

#include <random>

#include "engine/error.hpp"

namespace gs::analysis {

std::vector<Parameter> parameter_handles(const nn::TransformerLM& model) {
  std::vector<Parameter> out;
  for (const nn::NamedParameter& p : model.named_parameters()) out.push_back(p.parameter);
  return out;
}

LossFunction batch_loss(nn::TransformerLM& model, const nn::Batch& batch) {
  return [&model, &batch] { return model.loss(batch.inputs, batch.targets); };
}

std::vector<Array> random_direction(const std::vector<Parameter>& like, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<Array> v;
  for (const Parameter& p : like) {
    Array a = Array::from_shape(p.shape());
    for (Real& x : a) x = normal(rng);
    v.push_back(std::move(a));
  }
  return v;
}

std::vector<CurvatureScope> curvature_scopes(const nn::TransformerLM& model) {
  const std::vector<nn::NamedParameter> named = model.named_parameters();
  std::vector<CurvatureScope> scopes{{"model", {}}};
  for (std::size_t i = 0; i < named.size(); ++i) scopes[0].indices.push_back(i);
  for (std::size_t b = 0; b < model.blocks.size(); ++b) {
    const std::string prefix = "blocks." + std::to_string(b) + ".";
    CurvatureScope s{"block " + std::to_string(b), {}};
    for (std::size_t i = 0; i < named.size(); ++i)
      if (named[i].name.rfind(prefix, 0) == 0) s.indices.push_back(i);
    if (s.indices.empty()) throw Error("curvature_scopes: block " + std::to_string(b) + " has no parameters named " + prefix + "*");
    scopes.push_back(std::move(s));
  }
  return scopes;
}

std::vector<Parameter> select(const std::vector<Parameter>& all, const CurvatureScope& scope) {
  std::vector<Parameter> out;
  for (std::size_t i : scope.indices) out.push_back(all.at(i));
  return out;
}

std::vector<Array> select(const std::vector<Array>& all, const CurvatureScope& scope) {
  std::vector<Array> out;
  for (std::size_t i : scope.indices) out.push_back(all.at(i));
  return out;
}

CurvatureResult scope_lambda_max(const LossFunction& loss, const std::vector<Parameter>& all, const CurvatureScope& scope,
                                 const LanczosOptions& options) {
  return hessian_lambda_max(loss, select(all, scope), options);
}

CurvatureResult scope_preconditioned_lambda_max(const LossFunction& loss, const std::vector<Parameter>& all,
                                                const std::vector<Array>& preconditioner, const CurvatureScope& scope,
                                                const LanczosOptions& options) {
  if (preconditioner.size() != all.size())
    throw Error("scope_preconditioned_lambda_max: " + std::to_string(preconditioner.size()) +
                " preconditioner arrays for " + std::to_string(all.size()) + " parameters");
  return preconditioned_lambda_max(loss, select(all, scope), select(preconditioner, scope), options);
}

double adam_threshold(double beta1) { return (2.0 + 2.0 * beta1) / (1.0 - beta1); }

}  // namespace gs::analysis
