#include "experiments/lib/table.hpp"

#include <algorithm>
#include <functional>

#include "engine/error.hpp"
#include "experiments/lib/outputs.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::experiments {

Table::Table(std::vector<std::string> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size())
    throw Error("Table: a row has " + std::to_string(cells.size()) + " cells for " +
                std::to_string(columns_.size()) + " columns");
  rows_.push_back(std::move(cells));
}

namespace {

// The width of a cell as a terminal shows it: UTF-8 continuation bytes take no column.
std::size_t display_width(const std::string& s) {
  std::size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

std::string pad(const std::string& s, std::size_t width) { return s + std::string(width - display_width(s), ' '); }

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// The cells as `show(column, cell)` writes each, joined by `sep`.
std::string joined(const std::vector<std::string>& cells, const char* sep,
                   const std::function<std::string(std::size_t, const std::string&)>& show) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) line += (i > 0 ? sep : "") + show(i, cells[i]);
  return line;
}

}  // namespace

std::string Table::to_text() const {
  std::vector<std::size_t> width;
  for (const std::string& c : columns_) width.push_back(display_width(c));
  for (const auto& row : rows_)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l = joined(cells, "  ", [&](std::size_t i, const std::string& c) { return pad(c, width[i]); });
    out += l.erase(l.find_last_not_of(' ') + 1) + "\n";  // no trailing spaces
  };
  line(columns_);
  std::vector<std::string> rule;
  for (std::size_t w : width) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto& row : rows_) line(row);
  return out;
}

void Table::write_csv(const std::filesystem::path& path) const {
  const auto cell = [](std::size_t, const std::string& c) { return csv_cell(c); };
  std::string text = joined(columns_, ",", cell) + "\n";
  for (const auto& row : rows_) text += joined(row, ",", cell) + "\n";
  mark_writing(path);
  nn::write_file_atomically(path, text);
}

}  // namespace gs::experiments
