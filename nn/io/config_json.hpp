// The model config as the JSON members that DIR/config.json of checkpoints and dumps start with:
//   "vocab": 64, "context": 32, "d_model": 64, "heads": 4, "layers": 2, "d_ff": 256,
//   "placement": "pre", "norm": "layer", "residual": "none", "init": "xavier", "seed": 0
// and, where they apply, "mixln_post": K (placement mixln) and "dyt_alpha": 0.5 (norm dyt).
// d_ff is written as the actual width (ModelConfig::ff()), never as 0.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "nn/config.hpp"

namespace gs::nn {

class JsonField;

// Those members, in that order (include <nlohmann/json.hpp> to use the value).
nlohmann::ordered_json model_config_json(const ModelConfig& config);

// Reads them back from a parsed config.json: each count an integer from 1 to 2^31, the seed one from 0
// to 2^32 - 1, placement, norm, residual and init known names ("init" and "seed" may be absent: xavier, 0). Throws
// gs::Error naming the file and the member.
ModelConfig model_config_from_json(const JsonField& json);

// "" if a and b build the same architecture (vocab, context, d_model, heads, layers, d_ff, the three
// placement axes, mixln's K; not dyt_alpha, an initial value);
// otherwise the first difference, e.g. "heads is 4 in one and 8 in the other".
std::string architecture_difference(const ModelConfig& a, const ModelConfig& b);

}  // namespace gs::nn
