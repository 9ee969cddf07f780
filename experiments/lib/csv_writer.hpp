// A CSV file that grows while a run goes (train's metrics, step by step), always whole on disk.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace gs::experiments {

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
