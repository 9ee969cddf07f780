#include "experiments/lib/grid.hpp"

#include <algorithm>
#include <charconv>

#include "engine/error.hpp"

namespace gs::experiments {

// ---- Grid ----

Grid& Grid::axis(const std::string& name, const std::vector<std::string>& labels) {
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (std::find(labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(i), labels[i]) != labels.begin() + i)
      throw Error("grid: axis " + name + " has the label '" + labels[i] + "' twice");
  names_.push_back(name);
  labels_.push_back(labels);
  return *this;
}

std::size_t Grid::size() const {
  std::size_t n = 1;
  for (const auto& l : labels_) n *= l.size();
  return n;
}

std::size_t Grid::axis_index(const std::string& name) const {
  const auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end()) throw Error("grid: no axis named " + name);
  return static_cast<std::size_t>(it - names_.begin());
}

std::size_t Grid::position(std::size_t cell, std::size_t axis) const {
  for (std::size_t a = labels_.size(); a-- > axis + 1;) cell /= labels_[a].size();  // the faster axes
  return cell % labels_.at(axis).size();
}

std::size_t Grid::cell(const std::vector<std::size_t>& positions) const {
  if (positions.size() != labels_.size())
    throw Error("grid: " + std::to_string(positions.size()) + " positions for " + std::to_string(labels_.size()) + " axes");
  std::size_t c = 0;
  for (std::size_t a = 0; a < labels_.size(); ++a) c = c * labels_[a].size() + positions[a];
  return c;
}

std::string Grid::describe(std::size_t cell) const {
  std::string s;
  for (std::size_t a = 0; a < names_.size(); ++a) {
    const std::string& l = labels_[a][position(cell, a)];
    s += (a ? ", " : "") + (names_[a] == "placement" || names_[a] == "dataset" ? l : names_[a] + " " + l);
  }
  return s;
}

std::size_t index_in(const std::vector<std::size_t>& values, std::size_t value) {
  const auto it = std::find(values.begin(), values.end(), value);
  if (it == values.end()) throw Error("grid: " + std::to_string(value) + " is not among the axis's values");
  return static_cast<std::size_t>(it - values.begin());
}

std::string label(double value) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, value).ptr;  // the shortest text that reads back exactly
  return std::string(buf, end);
}

}  // namespace gs::experiments
