// A grid of measurements: named axes (placement, layers, lr, warmup, seed, ...), each a list of labels,
// and a cell for every combination of one label per axis, the last axis varying fastest. What a cell
// measured is a Record: named lists of numbers, which a shard writes to its cells.csv and a --merge
// reads back bit for bit (harness.hpp runs the cells).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gs::experiments {

class Grid {
 public:
  Grid& axis(const std::string& name, const std::vector<std::string>& labels);  // labels: distinct, no commas
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

// What one cell measured: named lists of numbers (one number is a list of one).
class Record {
 public:
  Record() = default;
  // Record r = {{"loss", {2.5}}, {"curve", {3.0, 2.9}}}: each quantity by name, with its list.
  Record(std::initializer_list<std::pair<const std::string, std::vector<double>>> quantities) : quantities_(quantities) {}
  void set(const std::string& name, double value) { quantities_[name] = {value}; }
  void set(const std::string& name, std::vector<double> values) { quantities_[name] = std::move(values); }
  void push(const std::string& name, double value) { quantities_[name].push_back(value); }
  bool has(const std::string& name) const { return quantities_.count(name) > 0; }
  double get(const std::string& name) const;                     // throws unless a list of one
  const std::vector<double>& list(const std::string& name) const;  // throws if absent
  const std::map<std::string, std::vector<double>>& quantities() const { return quantities_; }
  // Where a merged record came from ("--merge DIR: cell 3 (post, seed 1)"); "" for one measured in this
  // process. get and list name it when they throw, so a quantity missing from a shard names the shard.
  void set_origin(std::string origin) { origin_ = std::move(origin); }

 private:
  std::map<std::string, std::vector<double>> quantities_;
  std::string origin_;
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

// Labels for an axis: "16"; a real number in its shortest exact form ("0.001").
std::vector<std::string> labels(const std::vector<std::size_t>& values);
std::vector<std::string> labels(const std::vector<unsigned>& values);
std::vector<std::string> labels(const std::vector<double>& values);
std::string label(double value);

// ---- shards ----

// Which cells this process measures: shard k of n (1-based) takes cells k-1, k-1+n, k-1+2n, ...
struct Shard {
  std::size_t k = 1, n = 1;
  std::vector<std::size_t> cells(std::size_t grid_size) const;
};
Shard parse_shard(const std::string& text);  // "K/N"

// DIR/cells.csv (one row per cell and quantity: cell,<axes...>,quantity,values with the values
// space-separated at 17 significant digits, which read back exactly) and DIR/shard.txt (the program, the
// shard, and the flags that define the grid's numbers), both written atomically.
void write_shard(const std::filesystem::path& dir, const Grid& grid, const std::vector<std::size_t>& cells,
                 const std::vector<Record>& records, const std::string& program, const Shard& shard,
                 const std::string& flags);
// Every cell's record from the shards in `dirs`. Throws gs::Error naming the directory unless they are
// all the shards 1..N of one run of `program` with these `flags`, over this grid, and every value is one
// the run could have written (check_merged_values in grid.cpp: losses >= 0, step numbers whole, verdicts
// codes, and a cell that blew up at step k has k losses, a NaN final loss and the verdict diverged).
std::vector<Record> read_shards(const std::vector<std::string>& dirs, const Grid& grid, const std::string& program,
                                const std::string& flags);

// Calls fn(0), ..., fn(n - 1) on `jobs` threads (the calling thread is one of them), each index once,
// in no particular order. Each thread has its own tape (Tape::current() is per thread), so fn may
// train its own model; it must not touch another index's data. Rethrows the first exception.
void parallel_for(std::size_t n, unsigned jobs, const std::function<void(std::size_t)>& fn);

}  // namespace gs::experiments
