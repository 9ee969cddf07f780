#include "nn/io/config_json.hpp"

#include <cmath>
#include <cstdio>

#include "engine/error.hpp"

namespace gs::nn {

JsonMembers model_config_members(const ModelConfig& c) {
  JsonMembers m = {{"vocab", std::to_string(c.vocab)},
                   {"context", std::to_string(c.context)},
                   {"d_model", std::to_string(c.d_model)},
                   {"heads", std::to_string(c.heads)},
                   {"layers", std::to_string(c.layers)},
                   {"d_ff", std::to_string(c.ff())},
                   {"placement", json_quote(to_string(c.placement))},
                   {"norm", json_quote(to_string(c.norm))},
                   {"residual", json_quote(to_string(c.residual))}};
  if (c.placement == Placement::mixln) m.push_back({"mixln_post", std::to_string(c.mixln_post_blocks())});
  if (c.norm == Norm::dyt) {
    char alpha[32];
    std::snprintf(alpha, sizeof alpha, "%.17g", c.dyt_alpha);  // round-trips the double exactly
    m.push_back({"dyt_alpha", alpha});
  }
  m.push_back({"init", json_quote(to_string(c.init))});
  m.push_back({"seed", std::to_string(c.seed)});
  return m;
}

ModelConfig model_config_from_json(const Json& json, const std::string& file) {
  ModelConfig c;
  c.vocab = json.at("vocab", file).as_size("vocab", file);
  c.context = json.at("context", file).as_size("context", file);
  c.d_model = json.at("d_model", file).as_size("d_model", file);
  c.heads = json.at("heads", file).as_size("heads", file);
  c.layers = json.at("layers", file).as_size("layers", file);
  c.d_ff = json.at("d_ff", file).as_size("d_ff", file);
  if (json.has("mixln_post")) c.mixln_post = json.at("mixln_post", file).as_size("mixln_post", file);
  if (json.has("dyt_alpha")) {
    const Json& alpha = json.at("dyt_alpha", file);
    if (alpha.type != Json::Type::number || !std::isfinite(alpha.number))
      throw Error(file + ": dyt_alpha must be a finite number");
    c.dyt_alpha = alpha.number;
  }
  try {
    const std::string& placement = json.at("placement", file).as_string("placement", file);
    if (json.has("norm") || json.has("residual")) {  // the three axes
      c.placement = parse_placement(placement);
      c.norm = json.has("norm") ? parse_norm(json.at("norm", file).as_string("norm", file)) : Norm::layer;
      c.residual =
          json.has("residual") ? parse_residual(json.at("residual", file).as_string("residual", file)) : Residual::none;
      const std::string why = refusal(c);
      if (!why.empty()) throw Error("placement '" + placement_name(c) + "' is refused: " + why);
    } else {  // a file from before the axes: "placement" is a preset ("deepnorm", "rezero", ...)
      apply_placement(c, placement);
    }
    if (json.has("init")) c.init = parse_init(json.at("init", file).as_string("init", file));
  } catch (const Error& e) {
    throw Error(file + ": " + e.what());
  }
  if (json.has("seed")) c.seed = static_cast<unsigned>(json.at("seed", file).as_size("seed", file));
  return c;
}

std::string architecture_difference(const ModelConfig& a, const ModelConfig& b) {
  auto differ = [](const char* what, const std::string& x, const std::string& y) {
    return x == y ? std::string() : std::string(what) + " is " + x + " in one and " + y + " in the other";
  };
  for (const std::string& d :
       {differ("vocab", std::to_string(a.vocab), std::to_string(b.vocab)),
        differ("context", std::to_string(a.context), std::to_string(b.context)),
        differ("d_model", std::to_string(a.d_model), std::to_string(b.d_model)),
        differ("heads", std::to_string(a.heads), std::to_string(b.heads)),
        differ("layers", std::to_string(a.layers), std::to_string(b.layers)),
        differ("d_ff", std::to_string(a.ff()), std::to_string(b.ff())),
        differ("placement", placement_name(a), placement_name(b)),
        differ("mixln_post", a.placement == Placement::mixln ? std::to_string(a.mixln_post_blocks()) : "-",
               b.placement == Placement::mixln ? std::to_string(b.mixln_post_blocks()) : "-")})
    if (!d.empty()) return d;
  return "";
}

}  // namespace gs::nn
