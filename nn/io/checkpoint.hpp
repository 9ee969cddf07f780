// Checkpoints: a directory holding
//   DIR/config.json            the model config (nn/config_json.hpp), the training step, the optimizer's
//                              name, step count and slot names, every parameter's shape, and a "train"
//                              object of whatever else the caller wants to record (its data, say)
//   DIR/NAME.npy               one float64 .npy per parameter, NAME its dotted name
//                              (DIR/blocks.0.attn.q.weight.npy)
//   DIR/optimizer/SLOT/NAME.npy  the optimizer's state, when one is saved (SLOT: momentum, m, v)
// The directory is written as a whole (nn/atomic_file.hpp) and .npy stores doubles bit for bit, so
// loading what was saved is exact. Loading checks everything before it changes anything: a missing
// parameter, a wrong shape, a corrupt or unexpected file is refused with gs::Error naming the parameter
// and the file, and the model is left as it was.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "nn/config.hpp"
#include "nn/io/json.hpp"
#include "nn/module.hpp"
#include "nn/optim.hpp"

namespace gs::nn {

struct CheckpointInfo {
  ModelConfig config;
  std::size_t step = 0;        // training steps taken when it was saved
  std::string optimizer;       // "" if no optimizer state was saved
  Json train;                  // the "train" object given to save_checkpoint (null if none)
};

// Saves model (built from config) and, if given, the optimizer's state. Refuses to replace an existing
// directory that is not a checkpoint (has no config.json) and is not empty.
void save_checkpoint(const std::filesystem::path& dir, const Module& model, const ModelConfig& config,
                     std::size_t step, const Optimizer* optimizer = nullptr, const JsonMembers& train = {});

// Reads DIR/config.json only: what model to build before load_checkpoint.
CheckpointInfo read_checkpoint_info(const std::filesystem::path& dir);

// Loads into model, which must have been built from a config of the same architecture as the saved
// one, and, if given, into the optimizer, which must be of the saved kind. Returns what config.json says.
CheckpointInfo load_checkpoint(const std::filesystem::path& dir, Module& model, const ModelConfig& config,
                               Optimizer* optimizer = nullptr);

}  // namespace gs::nn
