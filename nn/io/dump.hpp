// `--dump DIR`: everything another implementation needs to check gradscope's model, on one batch,
// written as a whole (nn/io/directory_write.hpp; manifest kind "dump"):
//   config.json "format": "gradscope dump" and the model config (nn/io/config_json.hpp);
//   params/NAME.npy and grads/NAME.npy (float64, d loss / d parameter); batch/inputs.npy and
//   batch/targets.npy (int64 [batch, seq]); loss.npy (float64 [1], the mean cross-entropy); and
//   NAME.npy for each (NAME, array) of `extra` (e.g. sharpness's lambda_max).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

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
