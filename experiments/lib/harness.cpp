#include "experiments/lib/harness.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/error.hpp"
#include "engine/tape.hpp"
#include "experiments/lib/graph.hpp"
#include "experiments/lib/interrupt.hpp"
#include "experiments/lib/memory.hpp"
#include "experiments/lib/stats.hpp"
#include "experiments/lib/shard.hpp"
#include "experiments/lib/threads.hpp"
#include "experiments/lib/training.hpp"
#include "experiments/lib/outputs.hpp"
#include "nn/data/markov.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::experiments {

void Tick::operator()(std::size_t units, const std::string& what) {
  done += units;
  progress_.advance(units, cell_ + ": " + what);
}

void Experiment::add_overwrite_flag() {  // for every binary that writes --graph or --html
  if (!app.get_option_no_throw("--overwrite"))
    app.add_flag("--overwrite", html.overwrite, "replace an existing --graph or --html file that gradscope did not write");
}

std::unique_ptr<explorer::RunRecorder> Experiment::recorder(const std::string& name, const nn::TransformerLM& m) const {
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
  const double loss = nn::forward_backward(m, batch);
  if (std::isfinite(loss)) rec.record_pass(0, tape, loss);
  tape.keep_contributions = keep;
  tape.reset();
  rec.run().facts = {{"program", program}, {"run", name}, {"what", "one forward and backward pass at initialization"},
                     {"placement", nn::placement_name(config)}, {"loss", fmt(loss)}};
  add_run(order, rec.take());
}

void Experiment::draw_graph_at_init() {
  check_graph_file(graph, html.overwrite);
  // One pass with every contribution kept, and its DOT text: about 1 KiB per tape entry, twice (the
  // text, and the copy written)
  const Footprint pass = footprint(model.config(), model.batch, 0, true);
  check_fits(pass, 1, 2048.0 * pass.entries,
             "--graph with --layers " + std::to_string(model.layers) + " --d-model " + std::to_string(model.d_model) +
                 " --batch " + std::to_string(model.batch) + " --seq " + std::to_string(model.seq));
  write_model_graph(graph, model, html.overwrite);
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

// 0, or 128 + the signal when SIGINT or SIGTERM came after the last step (the run is complete, and says so).
static int exit_status_after_run(const std::string& program) {
  const int signal = interrupt_signal();
  if (signal == 0) return 0;
  std::fflush(stdout);
  std::fprintf(stderr, "%s: interrupted by %s after its last step; the run finished\n", program.c_str(),
               signal_name(signal).c_str());
  return 128 + signal;
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
  std::filesystem::path out_created;  // what claiming --out created: a run refused before writing into it removes it
  auto release_out = [&] { remove_unused_output_dir(out, out_created); };
  try {
    if (!graph.empty() && graph_step == 0) {  // --graph: one pass drawn, instead of the run
      draw_graph_at_init();
      return 0;
    }
    if (!graph.empty()) check_graph_file(graph, html.overwrite);  // --graph-step N: the body trains to step N and draws it
    explorer::check_html(html, program);  // before any work: never replace a file gradscope did not write
    if (html.wanted()) lock_output(html.file, "--html", program);  // and a second run on the same page is refused
    if (grid_) {  // nothing the program did not write is replaced (nn/io/directory_write.hpp), checked before any work
      out_created = claim_output_dir(out, "--out", {program, "out"});
      if (!dump.empty()) check_output_dir(dump, "--dump", {program, "dump"});
      watch_output(out, program);  // the first file written into --out marks it INCOMPLETE until the end
    }
    const auto start = std::chrono::steady_clock::now();
    body();
    if (prints_time && !sharded()) std::printf("time: %.1f s\n", seconds_since(start));
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
    release_out();
    return flag_error(e.what());
  } catch (const std::exception& e) {
    release_out();
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(), e.what());
    return 1;
  }
  return exit_status_after_run(program);
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

std::vector<std::size_t> Experiment::measure_cells(const Grid& grid, const std::string& unit, const CostFn& cost,
                                                   const std::function<void(const Cell&, Tick&)>& measure) {
  std::fflush(stdout);  // what the binary printed comes before the progress line (on stderr)
  const std::vector<std::size_t> cells = (shard.empty() ? Shard{} : parse_shard(shard)).cells(grid.size());
  std::size_t total = 0;
  for (std::size_t c : cells) total += cost ? cost(Cell{&grid, c}) : 1;
  Progress progress(program, total, unit);
  parallel_for(cells.size(), jobs, [&](std::size_t i) {
    const Cell cell{&grid, cells[i]};
    Tick tick(progress, grid.describe(cell.index));
    const std::string outcome = "; no tables or files of the grid written";
    if (interrupt_signal()) throw Interrupted(interrupt_signal(), 0, " before cell " + tick.cell() + outcome);
    try {
      measure(cell, tick);
    } catch (const Interrupted& e) {
      if (!e.detail.empty()) throw;
      throw Interrupted(e.signal, e.step, " of cell " + tick.cell() + outcome);
    }
    const std::size_t units = cost ? cost(cell) : 1;
    progress.advance(units - std::min(units, tick.done), tick.cell());
  });
  progress.finish();
  return cells;
}

void Experiment::select_depths_and_placements(std::vector<std::size_t>& depths) {
  if (app.get_option("--layers")->count()) {
    if (app.get_option("--layers-list")->count()) throw FlagError("give --layers or --layers-list, not both");
    depths = {model.layers};
  }
  if (app.get_option("--placement")->count()) {
    if (app.get_option("--placements")->count()) throw FlagError("give --placement or --placements, not both");
    placements = {model.placement};
  }
  sort_unique(depths);
}

ModelOptions Experiment::cell_model(const Cell& cell) const {
  ModelOptions m = model;
  const std::vector<std::string>& axes = cell.grid->names();
  if (std::count(axes.begin(), axes.end(), "placement")) m.placement = cell.grid->labels(cell.grid->axis_index("placement"))[cell["placement"]];
  if (std::count(axes.begin(), axes.end(), "seed")) m.seed = seed_list()[cell["seed"]];
  if (std::count(axes.begin(), axes.end(), "layers"))  // a depth scan: the axis's labels are the depths
    m.layers = std::stoul(cell.grid->labels(cell.grid->axis_index("layers"))[cell["layers"]]);
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
