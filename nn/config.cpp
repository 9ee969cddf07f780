#include "nn/config.hpp"

#include <cmath>

#include "engine/error.hpp"

namespace gs::nn {
namespace {

// "a, b, c" of a list of names.
std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The enum value whose name (names is indexed by the enum) is `name`, or throws naming `what` and the valid names.
template <class E>
E parse_name(const std::string& name, const std::vector<std::string>& names, const char* what) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<E>(i);
  throw Error(std::string(what) + ": unknown " + what + " '" + name + "' (valid: " + joined(names) + ")");
}

const std::vector<std::string> placement_names = {"post", "pre", "peri", "mixln", "b2t", "out"};

struct Preset {
  std::string name;
  Placement placement;
  Norm norm;
  Residual residual;
};

// Today's placements as triples, in print order (placement_presets()).
const std::vector<Preset>& presets() {
  static const std::vector<Preset> list = {{"post", Placement::post, Norm::layer, Residual::none},
                                           {"pre", Placement::pre, Norm::layer, Residual::none},
                                           {"peri", Placement::peri, Norm::layer, Residual::none},
                                           {"deepnorm", Placement::post, Norm::layer, Residual::deepnorm},
                                           {"rezero", Placement::pre, Norm::none, Residual::rezero}};
  return list;
}

// "P/N/R" split at '/': one to three parts.
std::vector<std::string> split_spec(const std::string& spec) {
  std::vector<std::string> parts(1);
  for (char c : spec) {
    if (c == '/') parts.emplace_back();
    else parts.back() += c;
  }
  return parts;
}

}  // namespace

const std::vector<std::string>& norm_names() {
  static const std::vector<std::string> names = {"layer", "rms", "dyt", "none"};
  return names;
}
const std::vector<std::string>& residual_names() {
  static const std::vector<std::string> names = {"none", "deepnorm", "admin", "rezero", "lns"};
  return names;
}
const std::vector<std::string>& init_names() {
  static const std::vector<std::string> names = {"xavier", "gpt2"};
  return names;
}
const std::vector<std::string>& qk_norm_names() {
  static const std::vector<std::string> names = {"none", "layer", "rms"};
  return names;
}

std::string to_string(Placement placement) { return placement_names.at(static_cast<std::size_t>(placement)); }
std::string to_string(Norm norm) { return norm_names().at(static_cast<std::size_t>(norm)); }
std::string to_string(Residual residual) { return residual_names().at(static_cast<std::size_t>(residual)); }
std::string to_string(Init init) { return init_names().at(static_cast<std::size_t>(init)); }

Placement parse_placement(const std::string& name) {
  if (name == "sandwich") return Placement::peri;
  try {
    return parse_name<Placement>(name, placement_names, "placement");
  } catch (const Error&) {
    throw Error("placement: unknown placement '" + name + "' (valid: post, pre, peri, sandwich, mixln, b2t, out)");
  }
}
Norm parse_norm(const std::string& name) { return parse_name<Norm>(name, norm_names(), "norm"); }
Residual parse_residual(const std::string& name) { return parse_name<Residual>(name, residual_names(), "residual"); }
Init parse_init(const std::string& name) { return parse_name<Init>(name, init_names(), "init"); }
std::string to_string(QkNorm qk_norm) { return qk_norm_names().at(static_cast<std::size_t>(qk_norm)); }
QkNorm parse_qk_norm(const std::string& name) { return parse_name<QkNorm>(name, qk_norm_names(), "qk_norm"); }

const std::vector<std::string>& placement_presets() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Preset& p : presets()) out.push_back(p.name);
    return out;
  }();
  return names;
}

std::string refusal(const ModelConfig& c) {
  const Placement P = c.placement;
  const Norm N = c.norm;
  const Residual R = c.residual;
  const std::string p = to_string(P);
  const bool norm_on_stream = P == Placement::post || P == Placement::mixln || P == Placement::b2t;
  if (N == Norm::none && P != Placement::pre)
    return "with norm none no norm is left to place: every placement is the plain x + F(x) (b2t's extra skip "
           "would only add x twice), which is written pre/none";
  if (R == Residual::deepnorm && P != Placement::post)
    return "deepnorm up-weights the skip in front of a Post-LN norm (Wang et al. 2022), so it needs placement post";
  if (R == Residual::admin && P != Placement::post)
    return "admin profiles the skip weights of Post-LN blocks (Liu et al. 2020; their code asserts Post-LN), so it "
           "needs placement post";
  if (R == Residual::rezero && norm_on_stream)
    return "rezero starts every block as the identity, which a norm on the stream (" + p +
           ") undoes: use pre, peri or out";
  if (R == Residual::lns && N == Norm::none)
    return "lns scales the output of each norm, and with norm none there is none";
  if (R == Residual::lns && norm_on_stream)
    return "lns (Sun et al. 2025) scales the norms inside Pre-LN branches; in " + p +
           " a norm's output is the stream itself, which it would shrink by 1/sqrt(l): use pre, peri or out";
  if (P == Placement::mixln && c.mixln_post_blocks() > c.layers)
    return "mixln_post " + std::to_string(c.mixln_post_blocks()) + " is more than the " + std::to_string(c.layers) +
           " layers";
  if (N == Norm::dyt && !std::isfinite(c.dyt_alpha))
    return "dyt_alpha " + std::to_string(c.dyt_alpha) + " is not a finite number";
  return "";
}

void apply_placement(ModelConfig& config, const std::string& spec) {
  ModelConfig c = config;
  bool preset = false;
  for (const Preset& p : presets())
    if (spec == p.name) {
      c.placement = p.placement;
      c.norm = p.norm;
      c.residual = p.residual;
      preset = true;
    }
  if (!preset) {
    const std::vector<std::string> parts = split_spec(spec);
    const std::string valid = "valid: a preset (" + joined(placement_presets()) +
                              ") or P/N/R with P one of post, pre, peri, sandwich, mixln, b2t, out, N one of " +
                              joined(norm_names()) + " (default layer), R one of " + joined(residual_names()) +
                              " (default none)";
    try {
      if (parts.size() > 3 || parts[0].empty()) throw Error("");
      c.placement = parse_placement(parts[0]);
      c.norm = parts.size() > 1 ? parse_norm(parts[1]) : Norm::layer;
      c.residual = parts.size() > 2 ? parse_residual(parts[2]) : Residual::none;
    } catch (const Error&) {
      throw Error("placement: unknown placement '" + spec + "' (" + valid + ")");
    }
  }
  const std::string why = refusal(c);
  if (!why.empty()) throw Error("placement '" + spec + "' is refused: " + why);
  config = c;
}

std::string placement_name(const ModelConfig& config) {
  for (const Preset& p : presets())
    if (config.placement == p.placement && config.norm == p.norm && config.residual == p.residual) return p.name;
  return to_string(config.placement) + "/" + to_string(config.norm) + "/" + to_string(config.residual);
}

}  // namespace gs::nn
