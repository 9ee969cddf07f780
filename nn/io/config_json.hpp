// The model config as the JSON members that DIR/config.json of checkpoints and dumps start with:
//   "vocab": 64, "context": 32, "d_model": 64, "heads": 4, "layers": 2, "d_ff": 256,
//   "placement": "pre", "init": "xavier", "seed": 0
// d_ff is written as the actual width (ModelConfig::ff()), never as 0.
#pragma once

#include <string>

#include "nn/config.hpp"
#include "nn/io/json.hpp"

namespace gs::nn {

JsonMembers model_config_members(const ModelConfig& config);

// Reads those members back from a parsed config.json; throws gs::Error naming `file` and the member.
ModelConfig model_config_from_json(const Json& json, const std::string& file);

// "" if a and b build the same architecture (vocab, context, d_model, heads, layers, d_ff, placement);
// otherwise the first difference, e.g. "heads is 4 in one and 8 in the other".
std::string architecture_difference(const ModelConfig& a, const ModelConfig& b);

}  // namespace gs::nn
