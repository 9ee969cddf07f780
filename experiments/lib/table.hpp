// A table of results: text cells under named columns, printed aligned for the terminal and written
// as the same cells in CSV.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gs::experiments {

// Rows of text cells under named columns.
class Table {
 public:
  explicit Table(std::vector<std::string> columns);
  void add_row(std::vector<std::string> cells);  // one cell per column
  std::string to_text() const;                   // aligned columns, a rule under the header
  // The same cells as CSV, written atomically (a temporary file renamed into place).
  void write_csv(const std::filesystem::path& path) const;

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace gs::experiments
