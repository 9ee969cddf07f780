// JSON through nlohmann-json, built with JSON_DIAGNOSTICS so that its errors name the member's path.
// parse_json adds a callback for what nlohmann lets through: a key given twice in one object, and nesting
// deeper than json_max_depth (copying and printing a value recurse). Readers call nlohmann's at() and
// get<T>() and catch its exception once, as one gs::Error naming the file (json_error).
// The model config is the members config.json of checkpoints and dumps start with ("vocab", "context",
// "d_model", "heads", "layers", "d_ff" (ModelConfig::ff(), never 0), "placement", "norm", "residual",
// then "mixln_post", "dyt_alpha" and "qk_norm" where they apply, "init", "seed").
#pragma once

#include <cstddef>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "nn/config.hpp"

namespace gs::nn {

inline constexpr std::size_t json_max_depth = 64;

nlohmann::json parse_json(std::string_view text, const std::string& file);  // gs::Error "FILE: invalid JSON: ..."
nlohmann::json read_json_file(const std::filesystem::path& path, std::size_t max_bytes);  // read_file, then parse_json
// "FILE: WHAT" for an exception e of nlohmann, WHAT its message without the "[json.exception.type_error.302] ".
std::string json_error(const std::string& file, const std::exception& e);

// value if an integer as JSON writes it (5, not 5.0, "5" or -1) from lo to hi, else "FILE: NAME is VALUE,
// expected an integer from LO to HI" (nlohmann's get<std::size_t> would cast, 1e30 undefinedly).
std::size_t json_count(const nlohmann::json& value, const std::string& name, std::size_t lo, std::size_t hi,
                       const std::string& file);

nlohmann::ordered_json model_config_json(const ModelConfig& config);  // the members above, in that order
// Each count from 1 to 2^31, the seed to 2^32 - 1, known names; "init" and "seed" may be absent.
ModelConfig model_config_from_json(const nlohmann::json& doc, const std::string& file);
// "" if a and b build the same architecture (not dyt_alpha, an initial value, nor the seed); otherwise
// the first difference, e.g. "heads is 4 in one and 8 in the other".
std::string architecture_difference(const ModelConfig& a, const ModelConfig& b);

}  // namespace gs::nn
