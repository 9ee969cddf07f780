// `--dump DIR`: everything another implementation needs to check gradscope's model, on one batch:
//   DIR/config.json               vocab, context, d_model, heads, layers, d_ff, placement (+ init, seed)
//   DIR/params/NAME.npy           every parameter's value, float64, NAME its dotted name
//   DIR/grads/NAME.npy            d loss / d parameter on the batch below, float64
//   DIR/batch/inputs.npy          int64 [batch, seq]
//   DIR/batch/targets.npy         int64 [batch, seq]
//   DIR/loss.npy                  float64 [1], the mean cross-entropy on that batch
// Every file is written atomically; other files in DIR are left alone.
#pragma once

#include <filesystem>
#include <functional>

#include "engine/var.hpp"
#include "nn/config.hpp"
#include "nn/data/dataset.hpp"
#include "nn/module.hpp"

namespace gs::nn {

// Computes a scalar loss of the model on (inputs, targets), e.g. TransformerLM::loss.
using LossFunction = std::function<Var(const IndexArray& inputs, const IndexArray& targets)>;

// Resets the current tape, zeroes the model's gradients, runs loss(batch) and its backward pass, and
// writes the files above. The model's gradients then hold the dumped ones. Returns the loss.
double write_dump(const std::filesystem::path& dir, const ModelConfig& config, Module& model, const Batch& batch,
                  const LossFunction& loss);

}  // namespace gs::nn
