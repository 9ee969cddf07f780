// `--dump DIR`: everything another implementation needs to check gradscope's model, on one batch:
//   DIR/config.json               "format": "gradscope dump", then vocab, context, d_model, heads, layers,
//                                 d_ff, placement, init, seed (nn/io/config_json.hpp)
//   DIR/params/NAME.npy           every parameter's value, float64, NAME its dotted name
//   DIR/grads/NAME.npy            d loss / d parameter on the batch below, float64
//   DIR/batch/inputs.npy          int64 [batch, seq]
//   DIR/batch/targets.npy         int64 [batch, seq]
//   DIR/loss.npy                  float64 [1], the mean cross-entropy on that batch
//   DIR/NAME.npy                  float64, for each (NAME, array) of `extra` (e.g. sharpness's lambda_max)
//   DIR/gradscope-output.json     the manifest: the program, kind "dump", every file's SHA-256
// The directory is written as a whole (nn/io/directory_write.hpp): an existing DIR is replaced only if
// it is empty or this program's own earlier dump.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>
#include <string_view>

#include "engine/var.hpp"
#include "nn/config.hpp"
#include "nn/data/dataset.hpp"
#include "nn/module.hpp"

namespace gs::nn {

// The scalar loss of the model on one batch (inputs, targets), e.g. TransformerLM::loss.
using BatchLoss = std::function<Var(const IndexArray& inputs, const IndexArray& targets)>;

// Resets the current tape, zeroes the model's gradients, runs loss(batch) and its backward pass, and
// writes the directory above, its manifest naming `program`. The model's gradients then hold the
// dumped ones. Returns the loss. Throws gs::Error naming DIR if it may not be replaced or cannot be
// written (nothing is then changed on disk).
double write_dump(const std::filesystem::path& dir, std::string_view program, const ModelConfig& config, Module& model,
                  const Batch& batch, const BatchLoss& loss,
                  const std::vector<std::pair<std::string, Array>>& extra = {});

}  // namespace gs::nn
