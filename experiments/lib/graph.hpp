// --graph and --dump, shared by the binaries: a picture of the computation graph of one forward and
// backward pass, with the gradient norm on every edge (engine/tools/inspect.hpp, to_dot), and a
// directory with a model's weights, gradients, batch and loss (nn/io/checkpoint.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "experiments/lib/flags.hpp"
#include "nn/data/dataset.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::experiments {

// Writes DOT text to `file`: rendered by Graphviz's `dot` when the name ends in .svg or .png, the DOT
// text itself otherwise. Atomic (a temporary file renamed into place), and marked "written by gradscope
// PROGRAM" (a DOT comment attribute, which an SVG keeps; a PNG has none): an existing file is replaced
// only if it carries that marker, or with `overwrite` (--overwrite; nn::check_output_file). Throws
// gs::Error naming the file if it may not be replaced or cannot be written, or if rendering is asked for
// and `dot` is missing or fails.
void write_graph_file(const std::string& file, const std::string& dot, bool overwrite = false);

// Refuses (gs::Error "--graph FILE: ...") what write_graph_file would refuse: for a binary to call before its work.
void check_graph_file(const std::string& file, bool overwrite = false);

// A fresh model with `options` (keep it small: the picture has ~50 nodes per layer), one forward and
// backward pass with Tape::keep_contributions on, on the dump batch of options.seed, drawn into
// `file`. Prints what it wrote.
void write_model_graph(const std::string& file, const ModelOptions& options, bool overwrite = false);
// The same for `model` as it is now, on `batch`, titled `title`: what --graph-step N draws after
// training to step N (train). Prints what it wrote.
void write_pass_graph(const std::string& file, nn::TransformerLM& model, const nn::Batch& batch,
                      const std::string& title, bool overwrite = false);

// For --dump: writes DIR/config.json, params/, grads/, batch/ and loss.npy (nn/io/checkpoint.hpp) of `model`
// as it is now, on `batch`, as a whole (nn::write_directory_atomically), with DIR/NAME.npy for each of
// `extra`. Prints where it wrote.
void dump_model(const std::string& dir, nn::TransformerLM& model, const nn::Batch& batch,
                const std::vector<std::pair<std::string, Array>>& extra = {});

}  // namespace gs::experiments
