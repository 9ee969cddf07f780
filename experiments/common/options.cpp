#include "options.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::experiments {

nn::ModelConfig ModelOptions::config() const {
  nn::ModelConfig c;
  c.vocab = vocab;
  c.context = seq;
  c.d_model = d_model;
  c.heads = heads;
  c.layers = layers;
  c.d_ff = d_ff;
  nn::apply_placement(c, placement);
  c.init = nn::parse_init(init);
  c.seed = seed;
  return c;
}

ModelOptions stability_model() {
  ModelOptions o;
  o.vocab = 16;
  o.layers = 6;
  o.d_model = 32;
  o.heads = 2;
  o.seq = 16;
  o.batch = 16;
  return o;
}

void add_model_options(CLI::App& app, ModelOptions& o) {
  app.add_option("--placement", o.placement, "normalization placement: post, pre, peri (sandwich), deepnorm, rezero")
      ->check(CLI::IsMember({"post", "pre", "peri", "sandwich", "deepnorm", "rezero"}))
      ->capture_default_str();
  app.add_option("--layers", o.layers, "number of residual blocks")->check(experiments::positive)->capture_default_str();
  app.add_option("--d-model", o.d_model, "model width d")->check(experiments::positive)->capture_default_str();
  app.add_option("--heads", o.heads, "attention heads (must divide d-model)")
      ->check(experiments::positive)
      ->capture_default_str();
  app.add_option("--d-ff", o.d_ff, "MLP hidden width (0: 4 * d-model)")->capture_default_str();
  app.add_option("--seq", o.seq, "sequence length T (also the model's context)")
      ->check(experiments::positive)
      ->capture_default_str();
  app.add_option("--batch", o.batch, "batch size B")->check(experiments::positive)->capture_default_str();
  app.add_option("--vocab", o.vocab, "vocabulary size (a text file sets its own)")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "random seed of the initialisation and the data")->capture_default_str();
  app.add_option("--init", o.init, "initialisation: xavier or gpt2")
      ->check(CLI::IsMember({"xavier", "gpt2"}))
      ->capture_default_str();
}

std::vector<std::string> model_flags_given(const CLI::App& app) {
  std::vector<std::string> given;
  for (const char* flag : {"--placement", "--layers", "--d-model", "--heads", "--d-ff", "--seq", "--batch", "--vocab",
                           "--seed", "--init"})
    if (app.get_option(flag)->count() > 0) given.emplace_back(flag);
  return given;
}

// ---- ProgressBar ----

ProgressBar::ProgressBar(std::size_t total_steps) : total_(total_steps), terminal_(::isatty(2) != 0) {}

void ProgressBar::update(std::size_t step, double loss, double lr, double grad_norm, double tokens_per_s) {
  const auto now = std::chrono::steady_clock::now();
  const bool last = step >= total_;
  if (terminal_) {
    if (!last && now - last_draw_ < std::chrono::milliseconds(100)) return;
  } else {
    const std::size_t every = std::max<std::size_t>(1, total_ / 20);
    if (!last && step % every != 0) return;
  }
  last_draw_ = now;
  constexpr int width = 24;
  const int filled = total_ ? static_cast<int>(width * static_cast<double>(step) / static_cast<double>(total_)) : width;
  std::string bar(static_cast<std::size_t>(width), ' ');
  for (int i = 0; i < filled && i < width; ++i) bar[static_cast<std::size_t>(i)] = '=';
  if (filled < width) bar[static_cast<std::size_t>(filled)] = '>';
  std::fprintf(stderr, "%sstep %zu/%zu [%s] loss %.4f lr %.2e |g| %.3f %6.1fk tok/s%s", terminal_ ? "\r" : "", step,
               total_, bar.c_str(), loss, lr, grad_norm, tokens_per_s / 1000.0, terminal_ ? "\x1b[K" : "\n");
  std::fflush(stderr);
  open_ = terminal_;
}

void ProgressBar::finish() {
  if (open_) std::fputc('\n', stderr);
  open_ = false;
}

// ---- CsvWriter ----

CsvWriter::CsvWriter(std::filesystem::path path, std::vector<std::string> columns)
    : path_(std::move(path)), columns_(columns.size()), last_flush_(std::chrono::steady_clock::now()) {
  for (std::size_t i = 0; i < columns.size(); ++i) text_ += (i ? "," : "") + columns[i];
  text_ += '\n';
  if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path());
}

CsvWriter::~CsvWriter() {
  try {
    flush();
  } catch (const std::exception& e) {
    std::cerr << "warning: " << e.what() << "\n";
  }
}

void CsvWriter::row(const std::vector<double>& values) {
  if (values.size() != columns_)
    throw Error("csv " + path_.string() + ": a row of " + std::to_string(values.size()) + " values for " +
                std::to_string(columns_) + " columns");
  char buf[32];
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.10g", values[i]);
    text_ += (i ? "," : "") + std::string(buf);
  }
  text_ += '\n';
  dirty_ = true;
  if (std::chrono::steady_clock::now() - last_flush_ > std::chrono::seconds(1)) flush();
}

void CsvWriter::keep_existing_rows(double last) {
  if (!std::filesystem::exists(path_)) return;
  std::istringstream old(nn::read_file(path_));
  std::string line, header = text_.substr(0, text_.find('\n'));
  if (!std::getline(old, line) || line != header) return;
  while (std::getline(old, line))
    if (!line.empty() && std::strtod(line.c_str(), nullptr) <= last) text_ += line + '\n';
  dirty_ = true;
}

void CsvWriter::flush() {
  if (!dirty_) return;
  nn::write_file_atomically(path_, text_);
  dirty_ = false;
  last_flush_ = std::chrono::steady_clock::now();
}

}  // namespace gs::experiments
