#include "experiments/lib/csv_writer.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "engine/error.hpp"
#include "experiments/lib/outputs.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::experiments {

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
    if (i) text_ += ',';
    text_ += buf;
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
  mark_writing(path_);
  nn::write_file_atomically(path_, text_);
  dirty_ = false;
  last_flush_ = std::chrono::steady_clock::now();
}

}  // namespace gs::experiments
