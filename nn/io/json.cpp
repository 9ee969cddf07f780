#include "nn/io/json.hpp"

#include <nlohmann/json.hpp>
#include <cmath>
#include <set>
#include <vector>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::nn {

using nlohmann::json;

std::string json_error(const std::string& file, const std::exception& e) {
  const std::string what = e.what();
  const std::size_t end = what.rfind("[json.exception.", 0) == 0 ? what.find("] ") : std::string::npos;
  return file + ": " + (end == std::string::npos ? what : what.substr(end + 2));
}

json parse_json(std::string_view text, const std::string& file) {
  std::vector<std::set<std::string>> keys;  // of each open container (an array's stays empty)
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      if (depth >= static_cast<int>(json_max_depth))  // depth: the containers open around this one
        throw Error(file + ": invalid JSON: nesting deeper than " + std::to_string(json_max_depth) + " levels");
      keys.emplace_back();
    } else if (event == E::object_end || event == E::array_end) {
      keys.pop_back();
    } else if (event == E::key && !keys.back().insert(parsed.get<std::string>()).second) {
      throw Error(file + ": invalid JSON: duplicate key " + parsed.dump(-1, ' ', false, json::error_handler_t::replace) +
                  (depth == 1 ? " at the top level" : ""));
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& e) {
    throw Error(json_error(file + ": invalid JSON", e));
  }
}

json read_json_file(const std::filesystem::path& path, std::size_t max_bytes) {
  return parse_json(read_file(path, max_bytes), path.string());
}

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

std::size_t json_count(const json& value, const std::string& name, std::size_t lo, std::size_t hi, const std::string& file) {
  if (!value.is_number_unsigned() || value.get<std::uint64_t>() < lo || value.get<std::uint64_t>() > hi)
    throw Error(file + ": " + name + " is " + value.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 40) +
                ", expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  return value.get<std::size_t>();
}

ModelConfig model_config_from_json(const json& doc, const std::string& file) {
  const std::size_t max = std::size_t{1} << 31;
  try {
    ModelConfig c;
    const auto count = [&](const char* key, std::size_t lo, std::size_t hi) { return json_count(doc.at(key), key, lo, hi, file); };
    for (const auto& [key, field] : {std::pair{"vocab", &ModelConfig::vocab}, {"context", &ModelConfig::context},
                                     {"d_model", &ModelConfig::d_model}, {"heads", &ModelConfig::heads},
                                     {"layers", &ModelConfig::layers}, {"d_ff", &ModelConfig::d_ff}})
      c.*field = count(key, 1, max);
    if (doc.contains("mixln_post")) c.mixln_post = count("mixln_post", 0, max);
    if (doc.contains("seed")) c.seed = static_cast<unsigned>(count("seed", 0, 4294967295u));
    if (doc.contains("dyt_alpha") && !std::isfinite(c.dyt_alpha = doc.at("dyt_alpha").get<double>()))
      throw Error(file + ": dyt_alpha must be a finite number");
    const auto name = [&](const char* key) { return doc.at(key).get<std::string>(); };
    const std::string placement = name("placement"), norm = name("norm"), residual = name("residual");
    try {
      c.placement = parse_placement(placement);
      c.norm = parse_norm(norm);
      c.residual = parse_residual(residual);
      if (const std::string why = refusal(c); !why.empty()) throw Error("'" + placement_name(c) + "' is refused: " + why);
    } catch (const Error& e) {
      throw Error(file + ": placement is not a placement: " + e.what());
    }
    const auto named = [&](const char* key, auto parse, const char* valid, auto& out) {  // an optional name
      try {
        if (doc.contains(key)) out = parse(name(key));
      } catch (const Error&) {
        throw Error(file + ": " + key + " " + valid);
      }
    };
    named("init", parse_init, "is not an initialisation (valid: xavier, gpt2)", c.init);
    named("qk_norm", parse_qk_norm, "is not a qk-norm (valid: none, layer, rms)", c.qk_norm);
    return c;
  } catch (const json::exception& e) {  // a member of another type: "(/placement) type must be string, but is number"
    throw Error(json_error(file, e));
  }
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
