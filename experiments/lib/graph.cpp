#include "experiments/lib/graph.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "explorer/dot.hpp"
#include "explorer/spawn.hpp"
#include "experiments/lib/outputs.hpp"
#include "nn/data/markov.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/io/checkpoint.hpp"
#include "nn/io/directory_write.hpp"

namespace gs::experiments {

namespace {

// The DOT text with the graph attribute comment="written by gradscope PROGRAM" (nn/io/directory_write.hpp):
// a DOT file carries it in its first line, and Graphviz writes it into an SVG as an XML comment, so
// that a later run recognises the file as its own and may replace it.
std::string signed_dot(const std::string& dot) {
  const std::size_t brace = dot.find('{');
  if (brace == std::string::npos) throw Error("write_graph_file: the text is not a DOT graph (no '{')");
  return dot.substr(0, brace + 1) + "\n  comment=\"" + nn::output_signature(nn::this_program()) + "\";" +
         dot.substr(brace + 1);
}

}  // namespace

void check_graph_file(const std::string& file, bool overwrite) {
  nn::check_output_file(file, "--graph", nn::this_program(), overwrite);
  lock_output(file, "--graph", nn::this_program());  // a second run drawing into the same file is refused
}

void write_graph_file(const std::string& file, const std::string& unsigned_dot, bool overwrite) {
  namespace fs = std::filesystem;
  const fs::path path(file);
  check_graph_file(file, overwrite);  // (again: a binary checks it before its work)
  const std::string dot = signed_dot(unsigned_dot);
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  const std::string format = path.extension() == ".svg" ? "svg" : path.extension() == ".png" ? "png" : "";
  if (format.empty()) return nn::write_file_atomically(path, dot);

  const std::string tmp = file + ".tmp-" + std::to_string(::getpid());
  nn::write_file_atomically(tmp + ".dot", dot);
  // dot in a process group of its own (spawn.hpp): a Ctrl-C reaches this process, not the drawing.
  const std::vector<std::string> command = {"dot", "-T" + format, "-o", tmp, tmp + ".dot"};
  const int status = explorer::spawn_and_wait(command);
  fs::remove(tmp + ".dot");
  if (status != 0) fs::remove(tmp);
  if (status == 127)
    throw Error("--graph " + file + ": drawing ." + format +
                " needs Graphviz's dot, which is not on PATH (apt-get install graphviz), or name a .dot file");
  if (status != 0)
    throw Error("--graph " + file + ": `dot -T" + format + " -o " + tmp + " " + tmp + ".dot` failed (exit status " +
                std::to_string(status) + ")");
  fs::rename(tmp, path);  // atomic: a reader sees the old file or the whole new one
}

void write_pass_graph(const std::string& file, nn::TransformerLM& model, const nn::Batch& batch,
                      const std::string& title, bool overwrite) {
  Tape& tape = Tape::current();
  const bool kept = tape.keep_contributions;
  tape.reset();
  tape.keep_contributions = true;  // every edge gets the norm of the gradient that flowed along it
  const Var loss = model.loss(batch.inputs, batch.targets);
  loss.backward();
  explorer::DotOptions dot;
  dot.title = title + ": loss " + std::to_string(loss.value()());
  const std::string text = explorer::to_dot(tape, dot);
  const std::size_t entries = tape.size();
  tape.keep_contributions = kept;
  tape.reset();
  write_graph_file(file, text, overwrite);
  std::printf("graph: %s (%zu tape entries)\n", file.c_str(), entries);
}

void write_model_graph(const std::string& file, const ModelOptions& options, bool overwrite) {
  nn::TransformerLM model(options.config());
  const nn::Batch batch = nn::dump_batch(nn::dump_corpus(options.vocab, options.batch, options.seq, options.seed),
                                     options.batch, options.seq, options.seed);
  write_pass_graph(file, model, batch,
                   options.placement + ", " + std::to_string(options.layers) + " layers, d " +
                       std::to_string(options.d_model) + ", batch " + std::to_string(options.batch) + " x " +
                       std::to_string(options.seq) + ", seed " + std::to_string(options.seed) + ", at init",
                   overwrite);
}

void dump_model(const std::string& dir, nn::TransformerLM& model, const nn::Batch& batch,
                const std::vector<std::pair<std::string, Array>>& extra) {
  Tape tape;  // its own tape: the caller's stays as it is
  TapeScope scope(tape);
  const double loss = nn::write_dump(dir, nn::this_program(), model.config, model, batch,  // never half a dump
                                     [&](const IndexArray& x, const IndexArray& y) { return model.loss(x, y); }, extra);
  std::printf("dumped: %s (loss %.6f on one fresh batch)\n", dir.c_str(), loss);
}

}  // namespace gs::experiments
