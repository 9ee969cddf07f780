// Module: the base of every layer. A module owns parameters and child modules, each under a name, so
// that every parameter has a dotted path such as "blocks.3.attn.q.weight" (what checkpoints, dumps and
// the tape listing print). Modules are neither copied nor moved: children are registered by address.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/parameter.hpp"

namespace gs::nn {

struct NamedParameter {
  std::string name;     // the dotted path from the root module
  Parameter parameter;  // a handle: copies share the value and the gradient
};

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  virtual ~Module() = default;

  // Every parameter of this module and of its children (depth first, in registration order).
  std::vector<NamedParameter> named_parameters() const;
  std::size_t parameter_count() const;  // the number of scalars
  void zero_grad();

  // Gives every parameter its dotted path as its name (call once on the root module), so that
  // the tape listing labels each "param" leaf with it.
  void name_parameters(const std::string& prefix = "");

 protected:
  // Registers a parameter of this module under `name`; returns it (store the handle as a member).
  Parameter add_parameter(const std::string& name, Array value);
  // Registers a child module (a member of this one, or owned by it) under `name`.
  void add_child(const std::string& name, Module& child);

 private:
  void collect(const std::string& prefix, std::vector<NamedParameter>& out) const;
  std::vector<NamedParameter> parameters_;                 // this module's own, with local names
  std::vector<std::pair<std::string, Module*>> children_;  // not owned here
};

}  // namespace gs::nn
