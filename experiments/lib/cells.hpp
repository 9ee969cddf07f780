// Every cell's result of a grid, as the experiment's own struct: what a grid binary's run() calls.
//
//   struct WarmupRun {                     // what one cell measured
//     std::vector<double> losses;
//     double final_loss = NAN;
//     Verdict verdict = Verdict::diverged;
//   };
//   NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WarmupRun, losses, final_loss, verdict)  // its JSON in a shard
//
//   void run(Experiment& ex, const Options& o) {
//     Grid grid;
//     grid.axis("placement", ex.placements).axis("lr", labels(o.lrs)).axis("seed", labels(ex.seed_list()));
//     const auto runs = run_steps<WarmupRun>(ex, grid, o.steps, [&](const Cell& c, Tick& tick) {
//       return train(ex.cell_model(c), o.lrs[c["lr"]], tick);  // train the model of cell c, measure it
//     });
//     if (!runs) return;  // a --shard run: its cells are in --out/shard.json, the tables come from --merge
//     ... print tables from (*runs)[grid.cell({p, l, s})] or seeds_of(*runs, grid, {p, l}) ...
//   }
//
// The results are measured here (on --jobs threads, each with its own tape); or, with --shard K/N,
// only the shard's cells are, written to --out/shard.json, and nothing is returned (the binary prints
// no tables); or, with --merge, they are read back from the shards, checked (shard.hpp), bit for bit
// the structs the shards measured. Every member of the struct must be in its NLOHMANN line (a merge
// refuses a shard without it, and the merged tables would miss it).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/error.hpp"
#include "experiments/lib/grid.hpp"
#include "experiments/lib/harness.hpp"
#include "experiments/lib/shard.hpp"

namespace gs::experiments {

// The results in cell order; `unit` names the progress line's count, cost(cell) the units of a cell
// (null: 1 each).
template <class Result>
std::optional<std::vector<Result>> run_cells(Experiment& ex, const Grid& grid, const std::string& unit, const CostFn& cost,
                                             const std::function<Result(const Cell&, Tick&)>& measure) {
  std::vector<Result> results(grid.size());
  if (!ex.merge.empty()) {
    const std::vector<MergedCell> merged = read_shards(ex.merge, grid, ex.program, ex.grid_flags(), nlohmann::json(Result{}));
    for (std::size_t c = 0; c < grid.size(); ++c) {
      try {
        merged[c].result.get_to(results[c]);
      } catch (const nlohmann::json::exception& e) {
        throw Error(merged[c].origin + ": " + json_message(e));
      }
    }
    return results;
  }
  const std::vector<std::size_t> cells =
      ex.measure_cells(grid, unit, cost, [&](const Cell& c, Tick& tick) { results[c.index] = measure(c, tick); });
  if (!ex.sharded()) return results;
  std::vector<nlohmann::json> measured;
  for (std::size_t c : cells) measured.push_back(results[c]);
  write_shard(ex.out, grid, cells, measured, ex.program, parse_shard(ex.shard), ex.grid_flags());
  return std::nullopt;
}

// run_cells for a grid of training runs of `steps` steps each: the progress line counts steps.
template <class Result>
std::optional<std::vector<Result>> run_steps(Experiment& ex, const Grid& grid, std::size_t steps,
                                             const std::function<Result(const Cell&, Tick&)>& measure) {
  return run_cells<Result>(ex, grid, "steps", [steps](const Cell&) { return steps; }, measure);
}

// run_cells for a depth scan (a grid with the axis "layers"): a cell costs its depth, the progress
// line counts layers.
template <class Result>
std::optional<std::vector<Result>> run_depths(Experiment& ex, const Grid& grid,
                                              const std::function<Result(const Cell&, Tick&)>& measure) {
  return run_cells<Result>(ex, grid, "layers", [&ex](const Cell& c) { return ex.cell_model(c).layers; }, measure);
}

}  // namespace gs::experiments
