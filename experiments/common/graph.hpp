// --graph FILE, shared by the experiment binaries: a picture of the computation graph of one forward
// and backward pass, with the gradient norm on every edge (engine/tools/inspect.hpp, to_dot).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "experiments/common/options.hpp"

namespace gs::experiments {

// Adds --graph FILE (written instead of the run: the binary draws and exits).
void add_graph_option(CLI::App& app, std::string& file);

// Writes DOT text to `file`: rendered by Graphviz's `dot` when the name ends in .svg or .png, the DOT
// text itself otherwise. Atomic (a temporary file renamed into place). Throws gs::Error naming the
// file if it cannot be written, or if rendering is asked for and `dot` is missing or fails.
void write_graph_file(const std::string& file, const std::string& dot);

// A fresh model with `options` (keep it small: the picture has ~50 nodes per layer), one forward and
// backward pass with Tape::keep_contributions on, on the batch --dump would use (dump_corpus with
// options.seed), drawn into `file`. Prints what it wrote.
void write_model_graph(const std::string& file, const ModelOptions& options);

}  // namespace gs::experiments
