// Checkpoints and dumps: directories written as a whole (nn/io/directory_write.hpp). A checkpoint holds
//   config.json                  "format": "gradscope checkpoint", "format_version": 2, the model config
//                                (nn/io/json.hpp), the step, the optimizer's name, steps, slots and
//                                hyperparameters, the caller's "train" object, every parameter's shape
//   NAME.npy                     one float64 .npy per parameter (blocks.0.attn.q.weight.npy)
//   optimizer/SLOT/NAME.npy      the optimizer's state, if saved (SLOT: momentum, m, v)
// .npy keeps doubles bit for bit and JSON numbers read back to the same double: loading is exact.
// Loading checks everything (every file read has the manifest's SHA-256, the files are exactly those
// config.json implies, the architecture, each parameter's name and shape, the optimizer's kind, slots and
// hyperparameters) before it changes anything; a refusal is one gs::Error "checkpoint: ..." naming the file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/var.hpp"
#include "nn/config.hpp"
#include "nn/data/dataset.hpp"
#include "nn/module.hpp"
#include "nn/optim.hpp"

namespace gs::nn {

class VerifiedDirectory;

inline constexpr int checkpoint_format_version = 2;

struct CheckpointInfo {
  std::filesystem::path dir;
  ModelConfig config;
  std::size_t step = 0;     // training steps taken when it was saved
  std::string program;      // the program that wrote it
  std::string optimizer;    // "" if no optimizer state was saved
  std::size_t optimizer_steps = 0;
  std::vector<std::string> optimizer_slots;
  std::vector<std::pair<std::string, double>> optimizer_hyperparameters;
  std::vector<std::pair<std::string, Shape>> parameters;

  // The "train" object given to save_checkpoint ({} if none), e.g. info.train().at("lr").get<double>().
  const nlohmann::json& train() const;

  std::shared_ptr<const nlohmann::json> document;  // config.json as parsed
  std::shared_ptr<const VerifiedDirectory> files;  // the manifest, for load_checkpoint
};

// An existing DIR is replaced only if it is `program`'s own earlier checkpoint.
void save_checkpoint(const std::filesystem::path& dir, std::string_view program, const Module& model,
                     const ModelConfig& config, std::size_t step, const Optimizer* optimizer = nullptr,
                     const nlohmann::json* train = nullptr);

// The manifest and config.json only: what model and optimizer to build before load_checkpoint.
CheckpointInfo read_checkpoint_info(const std::filesystem::path& dir);

// Into a model of the saved architecture and, if given, an optimizer of the saved kind and hyperparameters.
void load_checkpoint(const CheckpointInfo& info, Module& model, const ModelConfig& config,
                     Optimizer* optimizer = nullptr);
CheckpointInfo load_checkpoint(const std::filesystem::path& dir, Module& model, const ModelConfig& config,
                               Optimizer* optimizer = nullptr);

// The scalar loss of the model on one batch (inputs, targets), e.g. TransformerLM::loss.
using BatchLoss = std::function<Var(const IndexArray& inputs, const IndexArray& targets)>;

// `--dump DIR`: what another implementation needs to check gradscope's model on one batch (manifest kind
// "dump"): config.json ("format": "gradscope dump" and the model config), params/NAME.npy and
// grads/NAME.npy (d loss / d parameter), batch/inputs.npy and batch/targets.npy (int64 [batch, seq]),
// loss.npy (float64 [1]) and NAME.npy for each of `extra`. Resets the current tape, zeroes the model's
// gradients and runs loss(batch) and its backward pass (the model's gradients then hold the dumped ones);
// returns the loss.
double write_dump(const std::filesystem::path& dir, std::string_view program, const ModelConfig& config, Module& model,
                  const Batch& batch, const BatchLoss& loss,
                  const std::vector<std::pair<std::string, Array>>& extra = {});

}  // namespace gs::nn
