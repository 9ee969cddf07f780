// An Experiment's flags (harness.hpp): the ones it adds, and the checks of the flags given together
// before any work (each flag's own range is checked where it is added, flags.hpp).
#include <limits>

#include "experiments/lib/harness.hpp"
#include "nn/config.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::experiments {

Experiment::Experiment(std::string name, std::string description) : program(std::move(name)), app(description, program) {}

Experiment::Experiment(std::string name, std::string description, std::string default_out)
    : Experiment(std::move(name), std::move(description)) {
  grid_ = true;
  out = std::move(default_out);
  add_model_flags();
  add_flag(app, "--placements", placements, "placements to measure (comma-separated)", placement());
  add_flag(app, "--seeds", seeds, "seeds per measurement (mean and standard deviation over them)", Whole{1, 1000});
  add_flag(app, "--jobs", jobs, "cells (runs) measured in parallel threads (results do not depend on it)",
           Whole{1, max_jobs()});
  add_flag(app, "--out", out, "directory for the CSV files and the plots (PNG and SVG)");
  add_flag(app, "--dump", dump, "write weights, gradients, batch and loss of one fresh batch to this directory");
  add_flag(app, "--shard", shard, "measure only shard K of N of the grid's cells and write them to --out/shard.json",
           gs::experiments::shard());
  add_flag(app, "--merge", merge, "print the tables of the shards' cells in these directories (comma-separated)",
           existing_directory());
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
  add_flag(app, "--html-add", html.add, "put the runs of this explorer page into the --html page too (comma-separated)",
           regular_file(nn::default_read_limit));
  add_flag(app, "--snapshot-steps", html.snapshot_steps,
           "the steps whose whole graph the page's step scrubber shows: 0,1,2,5 or 0-10 or 0:300:10");
  add_overwrite_flag();
}

void Experiment::add_model_flags() {
  gs::experiments::add_model_flags(app, model);
  add_flag(app, "--graph", graph,
           "draw the graph of one forward and backward pass of the model (model flags; keep --layers small) "
           "into this file and exit: .svg or .png (needs Graphviz's dot), else DOT text");
  add_flag(app, "--graph-step", graph_step,
           "with --graph: draw the pass of training step N (after N updates) instead of initialization (train)",
           Whole{0, Whole::no_max, "0: at initialization"});
  add_overwrite_flag();
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
  return check_flags ? check_flags() : "";
}

std::string Experiment::inapplicable_flag() const {
  auto given = [&](const char* name) {
    const CLI::Option* o = app.get_option_no_throw(name);
    return o != nullptr && o->count() > 0;
  };
  auto value = [&](const char* name) { return flag_text(app, name); };
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
  if (given("--intervene")) {
    const std::string list = value("--intervene");
    if (list != "none" && ("," + list + ",").find(",none,") != std::string::npos)
      return "--intervene " + list + ": 'none' means no intervention; give it alone, or leave it out of the list";
  }
  if (hold_holds_every_run && app.get_option_no_throw("--hold") != nullptr && app.get_option_no_throw("--steps") != nullptr) {
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

}  // namespace gs::experiments
