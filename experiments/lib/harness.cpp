#include "experiments/lib/harness.hpp"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/error.hpp"
#include "engine/tape.hpp"
#include "experiments/lib/graph.hpp"
#include "experiments/lib/interrupt.hpp"
#include "experiments/lib/memory.hpp"
#include "experiments/lib/report.hpp"
#include "experiments/lib/training.hpp"
#include "nn/io/ownership.hpp"
#include "nn/data/markov.hpp"
#include "nn/transformer_lm.hpp"

extern "C" void openblas_set_num_threads(int);

namespace gs::experiments {

void setup_process() {
  openblas_set_num_threads(1);
  mallopt(M_MMAP_THRESHOLD, 256 << 20);  // no mmap (and munmap) for blocks under 256 MiB
  mallopt(M_TRIM_THRESHOLD, 1 << 30);    // no trimming of the heap's top below 1 GiB
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

namespace {
template <class T>
void first_of_each(std::vector<T>& v) {
  std::vector<T> kept;
  for (const T& x : v)
    if (std::find(kept.begin(), kept.end(), x) == kept.end()) kept.push_back(x);
  v = std::move(kept);
}
}  // namespace

void keep_first_of_each(std::vector<std::string>& v) { first_of_each(v); }
void keep_first_of_each(std::vector<std::size_t>& v) { first_of_each(v); }
void keep_first_of_each(std::vector<double>& v) { first_of_each(v); }

void sort_unique(std::vector<std::size_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

void Tick::operator()(std::size_t units, const std::string& what) {
  done += units;
  progress_.advance(units, cell_ + ": " + what);
}

Experiment::Experiment(std::string name, std::string description) : program(std::move(name)), app(description, program) {}

Experiment::Experiment(std::string name, std::string description, std::string default_out)
    : Experiment(std::move(name), std::move(description)) {
  grid_ = true;
  out = std::move(default_out);
  add_model_flags();
  add_flag(app, "--placements", placements, "placements to measure (comma-separated)");
  add_flag(app, "--seeds", seeds, "seeds per measurement (mean and standard deviation over them)");
  add_flag(app, "--jobs", jobs, "cells (runs) measured in parallel threads (results do not depend on it)");
  add_flag(app, "--out", out, "directory for the CSV files and the plots (PNG and SVG)");
  add_flag(app, "--dump", dump, "write weights, gradients, batch and loss of one fresh batch to this directory");
  add_flag(app, "--shard", shard, "measure only shard K of N of the grid's cells and write them to --out/cells.csv");
  add_flag(app, "--merge", merge, "print the tables of the shards' cells in these directories (comma-separated)");
  describe(app, "--seed", "the first seed: every measurement is repeated for seeds --seed .. --seed + --seeds - 1 "
                          "(model init and data)");
  describe(app, "--placement", "the placement of the --dump model (the grid uses --placements)");
  describe(app, "--dump", "write the model of the model flags at init, with its gradients on the batch of --seed "
                          "that the measurements at init use, to this directory; as train's --dump, an output in "
                          "addition to the run: the grid is measured too, and the dump written after it");
  add_html_flags();
}

void Experiment::add_html_flags() {
  add_flag(app, "--html", html.file,
           "write the explorer page of the runs to this HTML file: the graph of a forward and backward pass with "
           "every edge's gradient norm at the --snapshot-steps, and charts over the steps (docs/explorer.md)");
  add_flag(app, "--html-add", html.add, "put the runs of this explorer page into the --html page too (comma-separated)");
  add_flag(app, "--snapshot-steps", html.snapshot_steps,
           "the steps whose whole graph the page's step scrubber shows: 0,1,2,5 or 0-10 or 0:300:10");
}

std::unique_ptr<explorer::RunRecorder> Experiment::recorder(const std::string& name, const nn::Module& m) const {
  if (!html.wanted()) return nullptr;
  return std::make_unique<explorer::RunRecorder>(name, m, html.recorder());
}

void Experiment::add_run(std::size_t order, explorer::Run run) {
  std::lock_guard<std::mutex> lock(runs_mutex_);
  runs_.emplace_back(order, std::move(run));
}

void Experiment::record_init_pass(std::size_t order, const std::string& name, const nn::ModelConfig& config,
                                  const nn::Batch& batch) {
  if (!html.wanted()) return;
  nn::TransformerLM m(config);
  explorer::RunRecorder rec(name, m, html.recorder());
  Tape& tape = Tape::current();
  const bool keep = tape.keep_contributions;
  tape.keep_contributions = true;
  const double loss = forward_backward(m, batch);
  if (std::isfinite(loss)) rec.record_pass(0, tape, loss);
  tape.keep_contributions = keep;
  tape.reset();
  rec.run().facts = {{"program", program}, {"run", name}, {"what", "one forward and backward pass at initialization"},
                     {"placement", nn::placement_name(config)}, {"loss", fmt(loss)}};
  add_run(order, rec.take());
}

void Experiment::add_model_flags() {
  gs::experiments::add_model_flags(app, model);
  add_flag(app, "--graph", graph,
           "draw the graph of one forward and backward pass of the model (model flags; keep --layers small) "
           "into this file and exit: .svg or .png (needs Graphviz's dot), else DOT text");
  add_flag(app, "--graph-step", graph_step,
           "with --graph: draw the pass of training step N (after N updates) instead of initialization (train)");
}

std::string Experiment::flag_problem() {
  std::string problem = model.problem();
  if (problem.empty() && (!model.norm.empty() || !model.residual.empty())) {
    try {  // every placement by the name of what it now builds: "post" with --norm rms is "post/rms/none"
      if (grid_)
        for (std::string& p : placements) p = model.with_axes(p);
      model.placement = model.with_axes(model.placement);
    } catch (const std::exception& e) {
      problem = e.what();
    }
  }
  if (!problem.empty()) return problem;
  if (grid_) {
    keep_first_of_each(placements);
    if (static_cast<double>(model.seed) + static_cast<double>(seeds) - 1 > std::numeric_limits<unsigned>::max())
      return "--seed " + std::to_string(model.seed) + " + --seeds " + std::to_string(seeds) +
             " - 1 is past the largest seed, " + std::to_string(std::numeric_limits<unsigned>::max());
    if (!shard.empty() && !merge.empty()) return "--shard measures cells and --merge reads them: give one of them";
    if (!dump.empty() && (!shard.empty() || !merge.empty()))
      return "--dump is written by an unsharded run; leave it out of --shard and --merge runs";
    if (html.wanted() && (!shard.empty() || !merge.empty()))
      return "--html records the runs this process trains; leave it out of --shard and --merge runs";
  }
  problem = inapplicable_flag();
  if (!problem.empty()) return problem;
  if (graph_step > 0 && graph.empty()) return "--graph-step draws the --graph picture: give --graph FILE too";
  if (graph_step > 0 && html.wanted()) return "--graph-step draws one pass and trains no run: leave out --html";
  if (graph_step > 0 && !draws_graph_at_step)
    return "--graph-step " + std::to_string(graph_step) + ": " + program +
           " draws --graph at initialization only; train draws it at a training step";
  return "";
}

void Experiment::draw_graph_at_init() {
  check_graph_file(graph);
  // One pass with every contribution kept, and its DOT text: about 1 KiB per tape entry, twice (the
  // text, and the copy written)
  const Footprint pass = footprint(model.config(), model.batch, 0, true);
  check_fits(pass, 1, 2048.0 * pass.entries,
             "--graph with --layers " + std::to_string(model.layers) + " --d-model " + std::to_string(model.d_model) +
                 " --batch " + std::to_string(model.batch) + " --seq " + std::to_string(model.seq));
  write_model_graph(graph, model);
}

void Experiment::write_page_and_dump() {
  if (html.wanted()) {
    std::stable_sort(runs_.begin(), runs_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    explorer::Page page;
    page.title = "gradscope " + program;
    for (auto& [order, run] : runs_) page.runs.push_back(std::move(run));
    runs_.clear();
    explorer::write_html(html, std::move(page), program);
  }
  if (!dump.empty() && dump_at_init) {
    nn::TransformerLM m(model.config());
    dump_model(dump, m, nn::dump_batch(nn::dump_corpus(model.vocab, model.batch, model.seq, model.seed), model.batch,
                                   model.seq, model.seed));
  }
}

int Experiment::main(int argc, char** argv, const std::function<void()>& body) {
  setup_process();
  finish_cli(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // --help prints and gives 0; an error prints its one line
    return code == 0 ? 0 : 2;
  }
  auto flag_error = [&](const std::string& what) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s (%s --help lists the flags)\n", program.c_str(), what.c_str(), program.c_str());
    return 2;
  };
  if (const std::string problem = flag_problem(); !problem.empty()) return flag_error(problem);
  install_interrupt_handlers();  // from here on SIGINT and SIGTERM stop the run at a step boundary
  try {
    if (!graph.empty() && graph_step == 0) {  // --graph: one pass drawn, instead of the run
      draw_graph_at_init();
      return 0;
    }
    if (!graph.empty()) check_graph_file(graph);  // --graph-step N: the body trains to step N and draws it
    explorer::check_html(html, program);  // before any work: never replace a file gradscope did not write
    if (grid_) {  // nothing the program did not write is replaced (nn/io/ownership.hpp), checked before any work
      nn::claim_output_dir(out, "--out", {program, "out"});
      if (!dump.empty()) nn::check_output_dir(dump, "--dump", {program, "dump"});
      watch_output(out, program);  // the first file written into --out marks it INCOMPLETE until the end
    }
    body();
    if (grid_) output_complete();
    write_page_and_dump();
  } catch (const Interrupted& e) {
    std::fflush(stdout);
    const std::string marked = grid_ && output_marked_incomplete()
                                   ? "; " + (std::filesystem::path(out) / incomplete_marker).string() +
                                         " marks the files of --out as incomplete"
                                   : "";
    std::fprintf(stderr, "%s: %s%s\n", program.c_str(), e.what(), marked.c_str());
    return 128 + e.signal;
  } catch (const FlagError& e) {
    return flag_error(e.what());
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(), e.what());
    return 1;
  }
  if (const int signal = interrupt_signal()) {  // it came after the last step: the run is complete
    std::fflush(stdout);
    std::fprintf(stderr, "%s: interrupted by %s after its last step; the run finished\n", program.c_str(),
                 signal_name(signal).c_str());
    return 128 + signal;
  }
  return 0;
}

std::string Experiment::inapplicable_flag() const {
  auto given = [&](const char* name) {
    const CLI::Option* o = app.get_option_no_throw(name);
    return o != nullptr && o->count() > 0;
  };
  auto value = [&](const char* name) { return flag_value(app, name); };
  // The placements this run builds (already by the names of what they build, --norm applied).
  const std::vector<std::string> built = grid_ ? placements : std::vector<std::string>{model.placement};
  std::string names;
  bool mixln = false, dyt = false;
  for (const std::string& p : built) {
    nn::ModelConfig c;
    c.layers = model.layers;
    try {
      nn::apply_placement(c, p);
    } catch (const std::exception&) {
      continue;  // refused elsewhere, with its own reason
    }
    mixln = mixln || c.placement == nn::Placement::mixln;
    dyt = dyt || c.norm == nn::Norm::dyt;
    names += (names.empty() ? "" : ",") + p;
  }
  const std::string placement_flag = (grid_ ? "--placements " : "--placement ") + names;
  if (given("--mixln-post") && !mixln)
    return "--mixln-post " + model.mixln_post + " sets mixln's Post-LN blocks, and " + placement_flag +
           " has no mixln placement (e.g. --placement mixln)";
  if (given("--dyt-alpha") && !dyt)
    return "--dyt-alpha " + value("--dyt-alpha") + " sets DyT's alpha, and " + placement_flag +
           " has no DyT norm (e.g. --norm dyt)";
  if (app.get_option_no_throw("--optimizer") != nullptr && value("--optimizer") == "sgd")
    for (const char* adam : {"--adam-beta1", "--adam-beta2", "--adam-eps"})
      if (given(adam))
        return std::string(adam) + " " + value(adam) + " is a hyperparameter of Adam, and --optimizer is sgd";
  if (app.get_option_no_throw("--hold") != nullptr && app.get_option_no_throw("--steps") != nullptr) {
    const double hold = std::stod(value("--hold")), steps = std::stod(value("--steps"));
    if (hold > 0 && hold >= steps)
      return "--hold " + value("--hold") + " is not less than --steps " + value("--steps") +
             ": every step would be held at lr 0, and the run would train nothing";
  }
  return "";
}

std::vector<unsigned> Experiment::seed_list() const {
  std::vector<unsigned> list;
  for (std::size_t i = 0; i < seeds; ++i) list.push_back(model.seed + static_cast<unsigned>(i));
  return list;
}

std::string Experiment::grid_flags() const {
  std::string flags;
  for (const CLI::Option* o : app.get_options()) {
    const std::string name = o->get_name();
    if (o->count() == 0 || name == "--help" || name == "--out" || name == "--jobs" || name == "--shard" ||
        name == "--merge" || name == "--dump")
      continue;
    std::string values;
    for (const std::string& r : o->results()) values += (values.empty() ? "" : ",") + r;
    flags += (flags.empty() ? "" : " ") + name + "=" + values;
  }
  return flags;
}

std::optional<Results> Experiment::run_cells(const Grid& grid, const std::string& unit, const CostFn& cost,
                                             const CellFn& measure) {
  if (!merge.empty()) return Results(grid, read_shards(merge, grid, program, grid_flags()));
  const Shard s = shard.empty() ? Shard{} : parse_shard(shard);
  const std::vector<std::size_t> cells = s.cells(grid.size());
  std::size_t total = 0;
  for (std::size_t c : cells) total += cost ? cost(Cell{&grid, c}) : 1;
  Progress progress(program, total, unit);
  std::vector<Record> records(grid.size());
  parallel_for(cells.size(), jobs, [&](std::size_t i) {
    const Cell cell{&grid, cells[i]};
    Tick tick(progress, grid.describe(cell.index));
    const std::string outcome = "; no tables or files of the grid written";
    if (interrupt_signal()) throw Interrupted(interrupt_signal(), 0, " before cell " + tick.cell() + outcome);
    try {
      records[cell.index] = measure(cell, tick);
    } catch (const Interrupted& e) {
      if (!e.detail.empty()) throw;
      throw Interrupted(e.signal, e.step, " of cell " + tick.cell() + outcome);
    }
    const std::size_t units = cost ? cost(cell) : 1;
    progress.advance(units - std::min(units, tick.done), tick.cell());
  });
  progress.finish();
  if (shard.empty()) return Results(grid, std::move(records));
  write_shard(out, grid, cells, records, program, s, grid_flags());
  std::printf("%s: shard %zu/%zu: %zu of the grid's %zu cells measured, written to %s/cells.csv; the tables: %s --merge "
              "DIR1,DIR2,... with the same flags\n",
              program.c_str(), s.k, s.n, cells.size(), grid.size(), out.c_str(), program.c_str());
  return std::nullopt;
}

ModelOptions Experiment::cell_model(const Cell& cell) const {
  ModelOptions m = model;
  const std::vector<std::string>& axes = cell.grid->names();
  if (std::count(axes.begin(), axes.end(), "placement")) m.placement = cell.grid->labels(cell.grid->axis_index("placement"))[cell["placement"]];
  if (std::count(axes.begin(), axes.end(), "seed")) m.seed = seed_list()[cell["seed"]];
  return m;
}

void Experiment::check_memory(const nn::ModelConfig& largest, std::size_t optimizer_slots, bool keep_contributions,
                              std::size_t cells, double data) const {
  if (!merge.empty()) return;  // a merge measures nothing
  const std::size_t concurrent = std::max<std::size_t>(1, std::min<std::size_t>(jobs, cells));
  const std::string flags = "--layers " + std::to_string(largest.layers) + " --d-model " + std::to_string(largest.d_model) +
                            " --d-ff " + std::to_string(largest.ff()) + " --vocab " + std::to_string(largest.vocab) +
                            " --batch " + std::to_string(model.batch) + " --seq " + std::to_string(largest.context) +
                            (grid_ ? " --jobs " + std::to_string(jobs) : "");
  check_fits(footprint(largest, model.batch, optimizer_slots, keep_contributions), concurrent, data, flags);
}

}  // namespace gs::experiments
