#include "nn/io/config_json.hpp"

#include "engine/error.hpp"

namespace gs::nn {

JsonMembers model_config_members(const ModelConfig& c) {
  return {{"vocab", std::to_string(c.vocab)},
          {"context", std::to_string(c.context)},
          {"d_model", std::to_string(c.d_model)},
          {"heads", std::to_string(c.heads)},
          {"layers", std::to_string(c.layers)},
          {"d_ff", std::to_string(c.ff())},
          {"placement", json_quote(to_string(c.placement))},
          {"init", json_quote(c.init == Init::gpt2 ? "gpt2" : "xavier")},
          {"seed", std::to_string(c.seed)}};
}

ModelConfig model_config_from_json(const Json& json, const std::string& file) {
  ModelConfig c;
  c.vocab = json.at("vocab", file).as_size("vocab", file);
  c.context = json.at("context", file).as_size("context", file);
  c.d_model = json.at("d_model", file).as_size("d_model", file);
  c.heads = json.at("heads", file).as_size("heads", file);
  c.layers = json.at("layers", file).as_size("layers", file);
  c.d_ff = json.at("d_ff", file).as_size("d_ff", file);
  try {
    c.placement = parse_placement(json.at("placement", file).as_string("placement", file));
  } catch (const Error& e) {
    throw Error(file + ": " + e.what());
  }
  if (json.has("init")) {
    const std::string& init = json.at("init", file).as_string("init", file);
    if (init != "xavier" && init != "gpt2") throw Error(file + ": unknown init '" + init + "'");
    c.init = init == "gpt2" ? Init::gpt2 : Init::xavier;
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
        differ("placement", to_string(a.placement), to_string(b.placement))})
    if (!d.empty()) return d;
  return "";
}

}  // namespace gs::nn
