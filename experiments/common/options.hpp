// What every experiment binary shares: the model flags (same names and meanings everywhere), a
// one-line progress bar, and a CSV writer that never leaves a half-written file.
// This header includes CLI11; nn/ and engine/ headers never do.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "experiments/common/cli.hpp"
#include "nn/config.hpp"

namespace gs::experiments {

// The model flags' values. Set the fields before add_model_options to change a binary's defaults.
struct ModelOptions {
  std::size_t vocab = 64;
  std::size_t layers = 2;
  std::size_t d_model = 64;
  std::size_t heads = 4;
  std::size_t d_ff = 0;           // 0: 4 * d_model
  std::size_t seq = 32;           // T, the training sequence length; also the model's context
  std::size_t batch = 16;         // B
  std::string placement = "pre";
  std::string init = "xavier";
  unsigned seed = 0;              // the model's initialisation, and whatever else the binary seeds

  nn::ModelConfig config() const;  // context = seq; placement and init parsed
};

// The model that warmup and dynamics train: vocab 16, 6 layers, d 32, 2 heads, B 16, T 16 -- deep
// enough for Post-LN's trouble to show, small enough for an 80-run grid in a few minutes.
ModelOptions stability_model();

// Adds --placement --layers --d-model --heads --d-ff --seq --batch --vocab --seed --init, writing into
// `options`, their current values shown as defaults.
void add_model_options(CLI::App& app, ModelOptions& options);

// The model flags that were given on the command line, e.g. {"--layers", "--seq"}.
std::vector<std::string> model_flags_given(const CLI::App& app);

// One carriage-returned line on stderr:
//   step 1200/3000 [=========>           ] loss 1.3456 lr 1.00e-03 |g| 0.532  48.1k tok/s
// redrawn at most 10 times a second on a terminal; when stderr is not a terminal (a log file), one
// plain line every 5% of the steps instead.
class ProgressBar {
 public:
  explicit ProgressBar(std::size_t total_steps);
  // `step` counts completed steps (1..total).
  void update(std::size_t step, double loss, double lr, double grad_norm, double tokens_per_s);
  void finish();  // ends the line (so later output starts on a fresh one)

 private:
  std::size_t total_;
  bool terminal_;
  bool open_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

// A CSV file with a header row. Rows are kept in memory and the whole file is rewritten atomically
// (temporary file, then rename) by flush(), which row() also calls when a second has passed since the
// last write; so the file on disk is always complete. Numbers are written with 10 significant digits.
class CsvWriter {
 public:
  CsvWriter(std::filesystem::path path, std::vector<std::string> columns);
  ~CsvWriter();  // flushes (errors then are only printed)
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  void row(const std::vector<double>& values);
  void flush();
  // For a resumed run: keeps the rows of the file already at `path` (if its header is the same) whose
  // first value is at most `last`, e.g. the steps up to the checkpoint.
  void keep_existing_rows(double last);

 private:
  std::filesystem::path path_;
  std::size_t columns_;
  std::string text_;
  bool dirty_ = true;
  std::chrono::steady_clock::time_point last_flush_;
};

}  // namespace gs::experiments
