// A grid run in shards (docs/grids.md): --shard K/N measures every N-th cell and writes their results
// into one file, DIR/shard.json; --merge DIR1,DIR2,... reads the shards back, checks that they are
// all of one run, and gives every cell's result as if this process had measured it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/lib/grid.hpp"

namespace gs::experiments {

// Which cells this process measures: shard k of n (1-based) takes cells k-1, k-1+n, k-1+2n, ...
struct Shard {
  std::size_t k = 1, n = 1;
  std::vector<std::size_t> cells(std::size_t grid_size) const;
};
Shard parse_shard(const std::string& text);  // "K/N", checked by the --shard flag's range

inline constexpr const char* shard_file = "shard.json";

// DIR/shard.json, written atomically, one cell a line:
//   {"program": "warmup", "shard": "1/2", "flags": "--seeds=2 --steps=100", "cells": [
//   {"cell": 0, "at": {"lr": "0.001", "placement": "post", "seed": "0"}, "result": {"final_loss": 2.31, ...}},
//   ...]}
// results[i] is the result of cell cells[i] as JSON (the NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE line beside
// its struct). Every double reads back bit for bit: nlohmann writes the shortest text that does, and a
// NaN or infinity, which JSON has no number for, is written as the string "nan", "-nan", "inf" or
// "-inf" ("nan:0x7ff4000000000000" for a NaN of other bits). Prints one line saying what it wrote.
void write_shard(const std::filesystem::path& dir, const Grid& grid, const std::vector<std::size_t>& cells,
                 const std::vector<nlohmann::json>& results, const std::string& program, const Shard& shard,
                 const std::string& flags);

// A cell's result as --merge read it, and where it came from: "--merge DIR: cell 3 (post, seed 1)".
struct MergedCell {
  nlohmann::json result;
  std::string origin;
};

// Every cell's result from the shards in `dirs`, in cell order. Throws gs::Error naming the directory
// unless they are all the shards 1..N of one run of `program` with these `flags` (in any order) over
// this grid, and every result is one that run could have written: the quantities of `blank` (the JSON
// of a default result) and no others, each value in its range (check_values, shard.cpp).
std::vector<MergedCell> read_shards(const std::vector<std::string>& dirs, const Grid& grid, const std::string& program,
                                    const std::string& flags, const nlohmann::json& blank);

// A nlohmann exception's message without its "[json.exception.type_error.302] " prefix.
std::string json_message(const nlohmann::json::exception& e);

}  // namespace gs::experiments
