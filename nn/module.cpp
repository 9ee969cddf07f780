#include "nn/module.hpp"

namespace gs::nn {

Parameter Module::add_parameter(const std::string& name, Array value) {
  Parameter p(std::move(value), name);
  parameters_.push_back({name, p});
  return p;
}

void Module::add_child(const std::string& name, Module& child) { children_.emplace_back(name, &child); }

void Module::collect(const std::string& prefix, std::vector<NamedParameter>& out) const {
  for (const NamedParameter& p : parameters_) out.push_back({prefix + p.name, p.parameter});
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<NamedParameter> Module::named_parameters() const {
  std::vector<NamedParameter> out;
  collect("", out);
  return out;
}

std::size_t Module::parameter_count() const {
  std::size_t n = 0;
  for (const NamedParameter& p : named_parameters()) n += p.parameter.size();
  return n;
}

void Module::zero_grad() {
  for (NamedParameter& p : named_parameters()) p.parameter.zero_grad();
}

void Module::name_parameters(const std::string& prefix) {
  std::vector<NamedParameter> all;
  collect(prefix, all);
  for (NamedParameter& p : all) p.parameter.set_name(p.name);
}

}  // namespace gs::nn
