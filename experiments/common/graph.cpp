#include "experiments/common/graph.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "engine/engine.hpp"
#include "experiments/common/run.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::experiments {
namespace {

std::string shell_quoted(const std::string& s) {  // 'it'\''s'
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

void add_graph_option(CLI::App& app, std::string& file) {
  app.add_option("--graph", file,
                 "draw the graph of one forward and backward pass of the model (model flags; keep --layers small) "
                 "into this file and exit: .svg or .png (needs Graphviz's dot), else DOT text");
}

void write_graph_file(const std::string& file, const std::string& dot) {
  namespace fs = std::filesystem;
  const fs::path path(file);
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  const std::string format = ends_with(file, ".svg") ? "svg" : ends_with(file, ".png") ? "png" : "";
  if (format.empty()) return nn::write_file_atomically(path, dot);

  if (std::system("command -v dot > /dev/null 2>&1") != 0)
    throw Error("--graph " + file + ": drawing ." + format +
                " needs Graphviz's dot, which is not on PATH (apt-get install graphviz), or name a .dot file");
  const std::string tmp = file + ".tmp-" + std::to_string(::getpid());
  nn::write_file_atomically(tmp + ".dot", dot);
  const std::string command =
      "dot -T" + format + " -o " + shell_quoted(tmp) + " " + shell_quoted(tmp + ".dot") + " 2>&1";
  const int status = std::system(command.c_str());
  fs::remove(tmp + ".dot");
  if (status != 0) {
    fs::remove(tmp);
    throw Error("--graph " + file + ": `" + command + "` failed (exit status " + std::to_string(status) + ")");
  }
  fs::rename(tmp, path);  // atomic: a reader sees the old file or the whole new one
}

void write_model_graph(const std::string& file, const ModelOptions& options) {
  nn::TransformerLM model(options.config());
  const nn::Dataset data = dump_corpus(options.vocab, options.batch, options.seq, options.seed);
  std::mt19937_64 rng(options.seed);
  const nn::Batch batch = data.batch(nn::Split::train, options.batch, options.seq, rng);

  Tape& tape = Tape::current();
  const bool kept = tape.keep_contributions;
  tape.reset();
  tape.keep_contributions = true;  // every edge gets the norm of the gradient that flowed along it
  const Var loss = model.loss(batch.inputs, batch.targets);
  loss.backward();
  DotOptions dot;
  dot.title = options.placement + ", " + std::to_string(options.layers) + " layers, d " +
              std::to_string(options.d_model) + ", batch " + std::to_string(options.batch) + " x " +
              std::to_string(options.seq) + ": loss " + std::to_string(loss.value()()) + " at init, seed " +
              std::to_string(options.seed);
  const std::string text = to_dot(tape, dot);
  const std::size_t entries = tape.size();
  tape.keep_contributions = kept;
  tape.reset();
  write_graph_file(file, text);
  std::printf("graph: %s (%zu tape entries)\n", file.c_str(), entries);
}

}  // namespace gs::experiments
