#include "nn/io/config_json.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "engine/error.hpp"
#include "nn/io/json.hpp"

namespace gs::nn {

nlohmann::ordered_json model_config_json(const ModelConfig& c) {
  nlohmann::ordered_json j = {{"vocab", c.vocab},     {"context", c.context}, {"d_model", c.d_model},
                              {"heads", c.heads},     {"layers", c.layers},   {"d_ff", c.ff()},
                              {"placement", to_string(c.placement)},          {"norm", to_string(c.norm)},
                              {"residual", to_string(c.residual)}};
  if (c.placement == Placement::mixln) j["mixln_post"] = c.mixln_post_blocks();
  if (c.norm == Norm::dyt) j["dyt_alpha"] = c.dyt_alpha;  // nlohmann writes a double so that it reads back exactly
  if (c.qk_norm != QkNorm::none) j["qk_norm"] = to_string(c.qk_norm);
  j["init"] = to_string(c.init);
  j["seed"] = c.seed;
  return j;
}

namespace {

std::size_t count(const JsonField& json, const std::string& key) {
  return json.at(key).as_size_in(1, std::size_t{1} << 31);
}

}  // namespace

ModelConfig model_config_from_json(const JsonField& json) {
  ModelConfig c;
  c.vocab = count(json, "vocab");
  c.context = count(json, "context");
  c.d_model = count(json, "d_model");
  c.heads = count(json, "heads");
  c.layers = count(json, "layers");
  c.d_ff = count(json, "d_ff");
  if (json.has("mixln_post")) c.mixln_post = json.at("mixln_post").as_size_in(0, std::size_t{1} << 31);
  if (json.has("dyt_alpha")) {
    const JsonField alpha = json.at("dyt_alpha");
    c.dyt_alpha = alpha.as_double();
    if (!std::isfinite(c.dyt_alpha)) alpha.fail("must be a finite number");
  }
  const JsonField placement = json.at("placement");
  const std::string norm = json.at("norm").as_string(), residual = json.at("residual").as_string();
  try {
    c.placement = parse_placement(placement.as_string());
    c.norm = parse_norm(norm);
    c.residual = parse_residual(residual);
    if (const std::string why = refusal(c); !why.empty()) throw Error("'" + placement_name(c) + "' is refused: " + why);
  } catch (const Error& e) {
    placement.fail(std::string("is not a placement: ") + e.what());
  }
  auto named = [&](const std::string& key, auto parse, const char* valid, auto& out) {  // an optional name
    if (!json.has(key)) return;
    try {
      out = parse(json.at(key).as_string());
    } catch (const Error&) {
      json.at(key).fail(valid);
    }
  };
  named("init", parse_init, "is not an initialisation (valid: xavier, gpt2)", c.init);
  named("qk_norm", parse_qk_norm, "is not a qk-norm (valid: none, layer, rms)", c.qk_norm);
  if (json.has("seed")) c.seed = json.at("seed").as_unsigned();
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
        differ("qk_norm", to_string(a.qk_norm), to_string(b.qk_norm)),
        differ("mixln_post", a.placement == Placement::mixln ? std::to_string(a.mixln_post_blocks()) : "-",
               b.placement == Placement::mixln ? std::to_string(b.mixln_post_blocks()) : "-")})
    if (!d.empty()) return d;
  return "";
}

}  // namespace gs::nn
