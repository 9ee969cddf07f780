// A CSV file that a binary wrote, read back as rows of named cells (a quoted cell may hold commas).
#pragma once

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "nn/io/atomic_file.hpp"

namespace gs::test {

// The cells of one CSV line.
inline std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) cells.emplace_back();
    else cells.back() += c;
  }
  return cells;
}

// Every line after the header, as header name -> cell; REQUIREs as many cells as the header has.
inline std::vector<std::map<std::string, std::string>> read_csv(const std::filesystem::path& p) {
  std::stringstream lines(nn::read_file(p));
  std::string line;
  std::getline(lines, line);
  const std::vector<std::string> header = csv_cells(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(lines, line)) {
    const std::vector<std::string> cells = csv_cells(line);
    REQUIRE(cells.size() == header.size());
    std::map<std::string, std::string>& row = rows.emplace_back();
    for (std::size_t i = 0; i < cells.size(); ++i) row[header[i]] = cells[i];
  }
  return rows;
}

}  // namespace gs::test
