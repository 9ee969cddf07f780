// What every binary's main() builds on: the process set-up, the shared flags (flags.hpp), the one error
// catch, and the loop over a grid's cells on --jobs threads with one progress line, sharded with
// --shard K/N and merged with --merge DIR1,DIR2,... (docs/grids.md; a grid binary's run(), its result
// struct and run_cells: cells.hpp). A binary's main() is then:
//
//   int main(int argc, char** argv) {
//     Experiment ex("sharpness", "...", "out/sharpness");   // model and grid flags
//     Options o;
//     add_flag(ex.app, "--lrs", o.lrs, "peak learning rates", RealRange::above(0));  // with its range (flags.hpp)
//     return ex.main(argc, argv, [&] { run(ex, o); });
//   }
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/error.hpp"
#include "explorer/html_flags.hpp"
#include "experiments/lib/flags.hpp"
#include "experiments/lib/grid.hpp"
#include "experiments/lib/progress.hpp"
#include "nn/data/dataset.hpp"

namespace gs::experiments {

// OpenBLAS on one thread (faster for these sizes on small machines), and the heap policy: malloc keeps
// freed memory in the process (no mmap for blocks under 256 MiB, no trimming below 1 GiB free). Every
// training step allocates and frees the same few megabytes of arrays; returning them to the kernel and
// faulting them back in on the next step cost about a third of the run time (docs/performance.md).
void setup_process();

double seconds_since(std::chrono::steady_clock::time_point start);

// Removes repeats from a list flag's values, keeping the first of each in its place.
template <class T>
void keep_first_of_each(std::vector<T>& v) {
  std::vector<T> kept;
  for (const T& x : v)
    if (std::find(kept.begin(), kept.end(), x) == kept.end()) kept.push_back(x);
  v = std::move(kept);
}
// Sorts a list of depths and removes repeats (the depth scans print depths in increasing order).
void sort_unique(std::vector<std::size_t>& v);

// What a cell's function may report while it runs: `units` more of its cost done, and what it is at.
// Whatever of the cell's cost it did not report is counted when the cell returns.
class Tick {
 public:
  Tick(Progress& progress, std::string cell) : progress_(progress), cell_(std::move(cell)) {}
  void operator()(std::size_t units, const std::string& what);
  std::size_t done = 0;
  const std::string& cell() const { return cell_; }

 private:
  Progress& progress_;
  std::string cell_;
};

// What a binary's body throws for flags that are each in range but do not go together: one line and
// exit 2, like a bad flag.
struct FlagError : Error {
  using Error::Error;
};

using CostFn = std::function<std::size_t(const Cell&)>;  // a cell's progress units; null: 1 each

class Experiment {
 public:
  // A binary without a grid: its app and the error catch (add flags with add_flag, or add_model_flags).
  Experiment(std::string program, std::string description);
  // A grid binary: also the model flags, --graph, and --placements --seeds --jobs --out --dump --shard --merge.
  Experiment(std::string program, std::string description, std::string out);

  void add_model_flags();  // the model flags (flags.hpp) and --graph

  // Sets up the process, parses the flags (a bad one: one line, exit 2), draws --graph and exits, else
  // runs body; whatever it throws is one line "PROGRAM: error: ..." and exit 1 (exit 2 for a FlagError). After the body, --dump
  // writes the model of the model flags at init (unless dump_at_init is off: the binary dumps its own).
  int main(int argc, char** argv, const std::function<void()>& body);
  // The binary's own check of its flags together, run by main() after the shared ones and before any
  // work (nothing claimed or written yet): "" or why they make no run (exit 2). Null: none.
  std::function<std::string()> check_flags;
  // Whether --hold (where a binary has it) holds every run, and is refused when not below --steps
  // here; false where it sets one row's hold (causes), whose check_flags checks it only if that row runs.
  bool hold_holds_every_run = true;

  // --html FILE, --html-add FILE, --snapshot-steps LIST (docs/explorer.md): the grid constructor adds
  // them; a binary without a grid that trains or measures a model calls add_html_flags. main() checks
  // them before the body (the file is absent or this program's own page) and, after it, writes the page
  // of the runs given to add_run.
  void add_html_flags();
  void add_overwrite_flag();  // --overwrite (into html.overwrite), once, for --graph and --html
  bool html_wanted() const { return html.wanted(); }
  // A recorder for the run `name` of `model` when --html is given, else null. Pass it to step_hooks
  // (training.hpp) for nn::train_step, or call its record_pass/record_update; then add_run(order, rec->take()).
  std::unique_ptr<explorer::RunRecorder> recorder(const std::string& name, const nn::TransformerLM& model) const;
  // Puts a recorded run into the page; the page lists runs by `order` (a cell's index). Any thread.
  void add_run(std::size_t order, explorer::Run run);
  // For a binary that measures a model at init: records one forward and backward pass of a fresh model
  // of `config` on `batch` (its step 0) as the run `name`, on this thread's tape (reset before and after).
  void record_init_pass(std::size_t order, const std::string& name, const nn::ModelConfig& config,
                        const nn::Batch& batch);

  std::vector<unsigned> seed_list() const;  // --seed, --seed + 1, ..., --seed + --seeds - 1
  bool sharded() const { return !shard.empty(); }

  // The loop over a grid's cells that run_cells (cells.hpp) calls: measures this process's cells (all
  // of them, or --shard's) on --jobs threads, each with its own tape, with one progress line counting
  // cost(cell) units of each (null: 1), and returns them in cell order. A signal stops it before its next
  // cell (Interrupted: no tables, no files of the grid written).
  std::vector<std::size_t> measure_cells(const Grid& grid, const std::string& unit, const CostFn& cost,
                                         const std::function<void(const Cell&, Tick&)>& measure);
  std::string grid_flags() const;  // the flags given that decide the numbers (not --out, --jobs, ...): a shard's identity
  // The model flags with the cell's placement (its label on the axis "placement"), seed (--seed plus
  // its index on the axis "seed") and depth (its label on the axis "layers"), for the axes the grid has.
  ModelOptions cell_model(const Cell& cell) const;
  // A depth scan's selection: --layers (one depth, instead of the scan's --layers-list `depths`) and
  // --placement (one placement, instead of --placements), each refused beside its list; then `depths`
  // sorted and without repeats.
  void select_depths_and_placements(std::vector<std::size_t>& depths);

  // Refuses a run whose largest model (`largest`, stepping on --batch windows) cannot fit in memory, with
  // up to --jobs of them at once among `cells` cells, plus `data` bytes (memory.hpp).
  void check_memory(const nn::ModelConfig& largest, std::size_t optimizer_slots, bool keep_contributions,
                    std::size_t cells, double data) const;

  std::string program;
  CLI::App app;
  ModelOptions model;
  std::vector<std::string> placements = default_placements();  // --placements
  std::size_t seeds = 3;                                        // --seeds
  unsigned jobs = 2;                                            // --jobs
  std::string out, dump, graph, shard;                          // --out --dump --graph --shard
  // --graph-step N: --graph draws the pass of training step N instead of initialization. Only a binary
  // that sets draws_graph_at_step (train) takes N > 0: its body trains to step N and draws it.
  std::size_t graph_step = 0;
  bool draws_graph_at_step = false;
  std::vector<std::string> merge;                               // --merge
  bool dump_at_init = true;
  bool prints_time = false;  // after the body's tables (not in a --shard run): "time: T s", its wall time
  explorer::HtmlOptions html;  // --html --html-add --snapshot-steps

 private:
  // "" or why a flag given does not apply to this run: --mixln-post without a mixln placement, --dyt-alpha
  // without a DyT norm, an Adam hyperparameter with --optimizer sgd, --hold not less than --steps.
  std::string inapplicable_flag() const;
  // "" or why the flags given, together, make no run (every check before any work); may rename the
  // placements by the axes flags ("post" with --norm rms is "post/rms/none").
  std::string flag_problem();
  // --graph at initialization: one forward and backward pass drawn into the file, instead of the run.
  void draw_graph_at_init();
  // After the body: the --html page of the runs it recorded, and the --dump of the initial model.
  void write_page_and_dump();
  bool grid_ = false;
  std::mutex runs_mutex_;
  std::vector<std::pair<std::size_t, explorer::Run>> runs_;  // (order, run) for the --html page
};

}  // namespace gs::experiments
