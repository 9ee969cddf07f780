#include "nn/config.hpp"

#include "engine/error.hpp"

namespace gs::nn {

std::string to_string(Placement placement) {
  switch (placement) {
    case Placement::post: return "post";
    case Placement::pre: return "pre";
    case Placement::peri: return "peri";
    case Placement::deepnorm: return "deepnorm";
    case Placement::rezero: return "rezero";
  }
  return "?";
}

Placement parse_placement(const std::string& name) {
  if (name == "post") return Placement::post;
  if (name == "pre") return Placement::pre;
  if (name == "peri" || name == "sandwich") return Placement::peri;
  if (name == "deepnorm") return Placement::deepnorm;
  if (name == "rezero") return Placement::rezero;
  throw Error("placement: unknown placement '" + name + "' (valid: post, pre, peri, sandwich, deepnorm, rezero)");
}

}  // namespace gs::nn
