#include "nn/io/config_json.hpp"

#include <nlohmann/json.hpp>

#include "engine/error.hpp"
#include "nn/io/json.hpp"

namespace gs::nn {

nlohmann::ordered_json model_config_json(const ModelConfig& c) {
  return {{"vocab", c.vocab},         {"context", c.context},
          {"d_model", c.d_model},     {"heads", c.heads},
          {"layers", c.layers},       {"d_ff", c.ff()},
          {"placement", to_string(c.placement)}, {"init", c.init == Init::gpt2 ? "gpt2" : "xavier"},
          {"seed", c.seed}};
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
  const JsonField placement = json.at("placement");
  try {
    c.placement = parse_placement(placement.as_string());
  } catch (const Error& e) {
    placement.fail(std::string("is not a placement: ") + e.what());
  }
  if (json.has("init")) {
    const JsonField init = json.at("init");
    if (init.as_string() != "xavier" && init.as_string() != "gpt2") init.fail("is neither \"xavier\" nor \"gpt2\"");
    c.init = init.as_string() == "gpt2" ? Init::gpt2 : Init::xavier;
  }
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
        differ("placement", to_string(a.placement), to_string(b.placement))})
    if (!d.empty()) return d;
  return "";
}

}  // namespace gs::nn
