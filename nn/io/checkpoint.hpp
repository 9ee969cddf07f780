// Checkpoints: a directory written as a whole (nn/io/directory_write.hpp) holding
//   DIR/gradscope-output.json    the manifest: the program that wrote it, kind "checkpoint", and every
//                                other file with its SHA-256
//   DIR/config.json              "format": "gradscope checkpoint", "format_version": 2; the model config
//                                (nn/io/config_json.hpp); the training step; the optimizer's name,
//                                step count, slot names and hyperparameters; a "train" object of
//                                whatever the caller records (its flags, its data and the data's hash);
//                                every parameter's shape
//   DIR/NAME.npy                 one float64 .npy per parameter, NAME its dotted name
//                                (DIR/blocks.0.attn.q.weight.npy)
//   DIR/optimizer/SLOT/NAME.npy  the optimizer's state, when one is saved (SLOT: momentum, m, v)
// .npy stores doubles bit for bit and JSON numbers are written so that they read back to the same
// double, so loading what was saved is exact.
//
// read_checkpoint_info reads and verifies the manifest and config.json (each once) and checks that
// they agree: the files listed are exactly config.json, one .npy per parameter and one per parameter
// and optimizer slot, and the directory holds nothing else. load_checkpoint then reads every .npy,
// verifies its SHA-256, and checks everything (the architecture, each parameter's name and shape, the
// optimizer's kind, slots and hyperparameters) before it changes anything: a refusal is a gs::Error
// naming the parameter and the file, and leaves the model and the optimizer as they were.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/array.hpp"
#include "nn/config.hpp"
#include "nn/io/json.hpp"
#include "nn/module.hpp"
#include "nn/optim.hpp"

namespace gs::nn {

class VerifiedDirectory;

inline constexpr int checkpoint_format_version = 2;

struct CheckpointInfo {
  std::filesystem::path dir;
  ModelConfig config;
  std::size_t step = 0;              // training steps taken when it was saved
  std::string program;               // the program that wrote it (its manifest says)
  std::string optimizer;             // "" if no optimizer state was saved
  std::size_t optimizer_steps = 0;
  std::vector<std::string> optimizer_slots;
  std::vector<std::pair<std::string, double>> optimizer_hyperparameters;  // Optimizer::hyperparameters()
  std::vector<std::pair<std::string, Shape>> parameters;                  // every parameter's shape

  // The "train" object given to save_checkpoint (an empty object if none was), e.g.
  // info.train().at("lr").as_double(). It refers into `document`: keep the info while using it.
  JsonField train() const;

  // config.json as parsed, and the manifest: what load_checkpoint reads instead of parsing again.
  std::shared_ptr<const nlohmann::json> document;
  std::shared_ptr<const VerifiedDirectory> files;
};

// Saves model (built from config) and, if given, the optimizer's state and a "train" object (any JSON
// object). The directory's manifest names `program`; an existing DIR is replaced only if it is this
// program's own earlier checkpoint (nn/io/ownership.hpp), else gs::Error and nothing is written.
void save_checkpoint(const std::filesystem::path& dir, std::string_view program, const Module& model,
                     const ModelConfig& config, std::size_t step, const Optimizer* optimizer = nullptr,
                     const nlohmann::json* train = nullptr);

// Reads the manifest and config.json only: what model and optimizer to build before load_checkpoint.
CheckpointInfo read_checkpoint_info(const std::filesystem::path& dir);

// Loads into model, which must have been built from a config of the same architecture as the saved
// one, and, if given, into the optimizer, which must be of the saved kind with the same
// hyperparameters. Uses what read_checkpoint_info read; config.json is not parsed again.
void load_checkpoint(const CheckpointInfo& info, Module& model, const ModelConfig& config,
                     Optimizer* optimizer = nullptr);

// read_checkpoint_info, then load_checkpoint. Returns the info.
CheckpointInfo load_checkpoint(const std::filesystem::path& dir, Module& model, const ModelConfig& config,
                               Optimizer* optimizer = nullptr);

}  // namespace gs::nn
