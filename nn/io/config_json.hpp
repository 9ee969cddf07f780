// The model config as the JSON members that DIR/config.json of checkpoints and dumps start with:
//   "vocab": 64, "context": 32, "d_model": 64, "heads": 4, "layers": 2, "d_ff": 256,
//   "placement": "pre", "norm": "layer", "residual": "none", "init": "xavier", "seed": 0
// and, where they apply, "mixln_post": K (placement mixln) and "dyt_alpha": 0.5 (norm dyt).
// d_ff is written as the actual width (ModelConfig::ff()), never as 0. A file without "norm" and
// "residual" (written before the three axes) reads "placement" as a preset: "deepnorm", "rezero", ...
#pragma once

#include <string>

#include "nn/config.hpp"
#include "nn/io/json.hpp"

namespace gs::nn {

JsonMembers model_config_members(const ModelConfig& config);

// Reads those members back from a parsed config.json; throws gs::Error naming `file` and the member.
ModelConfig model_config_from_json(const Json& json, const std::string& file);

// "" if a and b build the same architecture (vocab, context, d_model, heads, layers, d_ff, the three
// placement axes, mixln's K; not dyt_alpha, an initial value);
// otherwise the first difference, e.g. "heads is 4 in one and 8 in the other".
std::string architecture_difference(const ModelConfig& a, const ModelConfig& b);

}  // namespace gs::nn
