// The registry of the residual block's three axes (nn/config.hpp): one row per kind, what varies with
// it. Each *_row function has one case per kind and no default, so -Wswitch names a kind added to its
// enum without a row; past the last kind it returns nothing, which ends the axis's table (rows_of).
#include <optional>

#include "nn/config.hpp"
#include "nn/dyt.hpp"
#include "nn/layernorm.hpp"
#include "nn/rmsnorm.hpp"

namespace gs::nn {
namespace {

std::optional<PlacementKind> placement_row(Placement p) {
  switch (p) {
    case Placement::post:
      return PlacementKind{.placement = p, .name = "post", .aliases = {}, .norm_on_stream = true, .final_norm = false};
    case Placement::pre:
      return PlacementKind{.placement = p, .name = "pre", .aliases = {}, .norm_on_stream = false, .final_norm = true};
    case Placement::peri:
      return PlacementKind{
          .placement = p, .name = "peri", .aliases = {"sandwich"}, .norm_on_stream = false, .final_norm = true};
    case Placement::mixln:
      return PlacementKind{.placement = p, .name = "mixln", .aliases = {}, .norm_on_stream = true, .final_norm = true};
    case Placement::b2t:
      return PlacementKind{.placement = p, .name = "b2t", .aliases = {}, .norm_on_stream = true, .final_norm = false};
    case Placement::out:
      return PlacementKind{.placement = p, .name = "out", .aliases = {}, .norm_on_stream = false, .final_norm = true};
  }
  return std::nullopt;
}

std::unique_ptr<NormLayer> make_layer_norm(std::size_t d, double) { return std::make_unique<LayerNorm>(d); }
std::unique_ptr<NormLayer> make_rms_norm(std::size_t d, double) { return std::make_unique<RMSNorm>(d); }
std::unique_ptr<NormLayer> make_dyt(std::size_t d, double alpha) { return std::make_unique<DyT>(d, alpha); }
std::unique_ptr<NormLayer> make_no_norm(std::size_t, double) { return nullptr; }

std::optional<NormKind> norm_row(Norm n) {
  switch (n) {
    case Norm::layer:
      return NormKind{
          .norm = n, .name = "layer", .title = "LayerNorm", .has_statistics = true, .make = make_layer_norm};
    case Norm::rms:
      return NormKind{.norm = n, .name = "rms", .title = "RMSNorm", .has_statistics = true, .make = make_rms_norm};
    case Norm::dyt:
      return NormKind{.norm = n, .name = "dyt", .title = "DyT", .has_statistics = false, .make = make_dyt};
    case Norm::none:
      return NormKind{.norm = n, .name = "none", .title = "", .has_statistics = false, .make = make_no_norm};
  }
  return std::nullopt;
}

std::optional<ResidualKind> residual_row(Residual r) {
  switch (r) {
    case Residual::none: return ResidualKind{.residual = r, .name = "none"};
    case Residual::deepnorm: return ResidualKind{.residual = r, .name = "deepnorm"};
    case Residual::admin: return ResidualKind{.residual = r, .name = "admin"};
    case Residual::rezero: return ResidualKind{.residual = r, .name = "rezero"};
    case Residual::lns: return ResidualKind{.residual = r, .name = "lns"};
  }
  return std::nullopt;
}

// An axis's table: row(0), row(1), ... up to the first value without a row.
template <class Kind, class Enum>
std::vector<Kind> rows_of(std::optional<Kind> (*row)(Enum)) {
  std::vector<Kind> rows;
  for (int i = 0;; ++i) {
    std::optional<Kind> r = row(static_cast<Enum>(i));
    if (!r) return rows;
    rows.push_back(std::move(*r));
  }
}

template <class Kind>
std::vector<std::string> names_of(const std::vector<Kind>& rows) {
  std::vector<std::string> names;
  for (const Kind& k : rows) names.push_back(k.name);
  return names;
}

}  // namespace

const std::vector<PlacementKind>& placement_kinds() {
  static const std::vector<PlacementKind> rows = rows_of(placement_row);
  return rows;
}
const std::vector<NormKind>& norm_kinds() {
  static const std::vector<NormKind> rows = rows_of(norm_row);
  return rows;
}
const std::vector<ResidualKind>& residual_kinds() {
  static const std::vector<ResidualKind> rows = rows_of(residual_row);
  return rows;
}

const PlacementKind& kind_of(Placement p) { return placement_kinds().at(static_cast<std::size_t>(p)); }
const NormKind& kind_of(Norm n) { return norm_kinds().at(static_cast<std::size_t>(n)); }
const ResidualKind& kind_of(Residual r) { return residual_kinds().at(static_cast<std::size_t>(r)); }

const std::vector<std::string>& placement_names() {
  static const std::vector<std::string> names = names_of(placement_kinds());
  return names;
}
const std::vector<std::string>& norm_names() {
  static const std::vector<std::string> names = names_of(norm_kinds());
  return names;
}
const std::vector<std::string>& residual_names() {
  static const std::vector<std::string> names = names_of(residual_kinds());
  return names;
}

}  // namespace gs::nn
