// A grid of measurements: named axes (placement, layers, lr, warmup, seed, ...), each a list of labels,
// and a cell for every combination of one label per axis, the last axis varying fastest. What a cell
// measured is the experiment's own struct (cells.hpp runs the cells; shard.hpp writes and merges them).
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

namespace gs::experiments {

class Grid {
 public:
  Grid& axis(const std::string& name, const std::vector<std::string>& labels);  // labels: distinct         
  std::size_t size() const;                                                      // cells: the product of the lengths
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<std::string>& labels(std::size_t axis) const { return labels_.at(axis); }
  std::size_t axis_index(const std::string& name) const;                         // throws for an unknown axis
  std::size_t position(std::size_t cell, std::size_t axis) const;                // the cell's index along the axis
  std::size_t cell(const std::vector<std::size_t>& positions) const;             // the cell at these positions
  std::string describe(std::size_t cell) const;                                  // "post, layers 16, seed 1"

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<std::string>> labels_;
};

// One cell as the function that measures it sees it: c["seed"] is its index along the seed axis.
struct Cell {
  const Grid* grid;
  std::size_t index;
  std::size_t operator[](const std::string& axis) const { return grid->position(index, grid->axis_index(axis)); }
};

// The runs of every seed (the last axis) of the cell at `positions` on the axes before it, in seed order:
// seeds_of(runs, grid, {p, w}) on a grid (placement, warmup, seed) is the seeds of placement p, warmup w.
template <class Run>
std::vector<const Run*> seeds_of(const std::vector<Run>& runs, const Grid& grid, std::vector<std::size_t> positions) {
  positions.push_back(0);
  const std::size_t first = grid.cell(positions), seeds = grid.labels(positions.size() - 1).size();
  std::vector<const Run*> out;
  for (std::size_t s = 0; s < seeds; ++s) out.push_back(&runs.at(first + s));
  return out;
}

// A grid's runs (run i measured cell i) as its report reads them; a report's struct derives from it and
// adds what else it reads (the options, the depths).
template <class Run>
struct GridRuns {
  const std::vector<Run>& runs;
  const Grid& grid;
  std::vector<const Run*> seeds(std::vector<std::size_t> positions) const { return seeds_of(runs, grid, std::move(positions)); }
};

// Where `value` is in `values` (a depth among the values of an axis "layers"); throws if it is not.
std::size_t index_in(const std::vector<std::size_t>& values, std::size_t value);

// Labels for an axis: a whole number as it is ("16"), a real number in its shortest exact form ("0.001").
std::string label(double value);
template <class T>
std::vector<std::string> labels(const std::vector<T>& values) {
  std::vector<std::string> out;
  for (const T& v : values) {
    if constexpr (std::is_floating_point_v<T>)
      out.push_back(label(v));
    else
      out.push_back(std::to_string(v));
  }
  return out;
}

}  // namespace gs::experiments
