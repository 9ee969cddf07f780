// The model config as the JSON members that DIR/config.json of checkpoints and dumps start with:
//   "vocab": 64, "context": 32, "d_model": 64, "heads": 4, "layers": 2, "d_ff": 256,
//   "placement": "pre", "norm": "layer", "residual": "none", "init": "xavier", "seed": 0
// and, where they apply, "mixln_post": K (placement mixln) and "dyt_alpha": 0.5 (norm dyt).
// d_ff is written as the actual width (ModelConfig::ff()), never as 0.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "nn/config.hpp"

namespace gs::nn {

// Those members, in that order (include <nlohmann/json.hpp> to use the value).
nlohmann::ordered_json model_config_json(const ModelConfig& config);

// Reads them back from config.json's document: each count an integer from 1 to 2^31, the seed one from 0
// to 2^32 - 1, placement, norm, residual and init known names ("init" and "seed" may be absent: xavier,
// 0). Throws one gs::Error naming the file and the member ("FILE: layers is 1e+30, expected an integer
// from 1 to 2147483648").
ModelConfig model_config_from_json(const nlohmann::json& doc, const std::string& file);

// value if it is an integer as JSON writes it (5, not 5.0, "5" or -1) from lo to hi; else gs::Error
// "FILE: NAME is VALUE, expected an integer from LO to HI" (nlohmann's get<std::size_t> would cast).
std::size_t json_count(const nlohmann::json& value, const std::string& name, std::size_t lo, std::size_t hi,
                       const std::string& file);

// "" if a and b build the same architecture (vocab, context, d_model, heads, layers, d_ff, the three
// placement axes, mixln's K; not dyt_alpha, an initial value);
// otherwise the first difference, e.g. "heads is 4 in one and 8 in the other".
std::string architecture_difference(const ModelConfig& a, const ModelConfig& b);

}  // namespace gs::nn
