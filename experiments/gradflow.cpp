// gradflow: where the gradient is at initialization, for each normalization placement.
//
//   (a) the per-layer profile: |dL/dW|_F for every parameter group of every block (attention q, k, v,
//       o weights, fc1, fc2, LN gains), the embeddings and the head, of a model of --layers blocks;
//   (b) the depth scan: the LAST block's FFN weight gradients |dL/dW^{2,L}|_F (fc2.weight) and
//       |dL/dW^{1,L}|_F (fc1.weight) for depths L in --depths, with the slope of log|g| on log L.
//
// The claim tested, Xiong et al. 2020 ("On Layer Normalization in the Transformer Architecture"),
// Theorem 1: at initialization
//   Post-LN   |dL/dW^{2,L}|_F <= O(d sqrt(ln d))          independent of L: slope 0
//   Pre-LN    |dL/dW^{2,L}|_F <= O(d sqrt(ln d / L))      shrinks like L^(-1/2): slope -0.5
// because in Pre-LN the stream x_L = x_0 + sum of 2L branches has |x_L|^2 growing like L, and the
// final LN (whose Jacobian is of size sqrt(d)/|x_L|) scales every gradient that enters the stream by
// about 1/sqrt(L). Their Figure 3 shows the per-layer profile: Post-LN's gradient grows towards the
// output, Pre-LN's is flat across layers.
//
// Every measurement: a fresh model (seed s) at init, one fresh Markov batch (seed s; the batch
// `--dump` would write for that seed), the mean cross-entropy, one backward pass. Seeds s = --seed,
// --seed + 1, ..., and every number printed is a mean ± sample std over them.
//
//   build/bin/gradflow                   the defaults: 18 s wall, 12 s user on 2 shared cores
//   build/bin/gradflow --placements post,pre --depths 2,4,8,16,32,64 --seeds 5
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "engine/engine.hpp"
#include "experiments/common/graph.hpp"
#include "experiments/common/options.hpp"
#include "experiments/common/probe.hpp"
#include "experiments/common/report.hpp"
#include "experiments/common/run.hpp"
#include "nn/transformer_lm.hpp"

using namespace gs;
using namespace gs::experiments;

namespace {

struct GradflowOptions {
  std::vector<std::string> placements = all_placements();
  std::vector<std::size_t> depths = {2, 4, 8, 16, 32};
};

// What one (placement, depth) gave, one entry per seed.
struct Runs {
  std::vector<double> loss;
  std::vector<GradNorms> norms;
};
using Key = std::pair<std::string, std::size_t>;  // (placement, layers)

// One model at init on one batch: its loss, then its gradients grouped (probe.hpp).
void measure(const nn::ModelConfig& config, const nn::Batch& batch, Runs& into) {
  nn::TransformerLM model(config);
  Tape& tape = Tape::current();
  tape.reset();
  model.zero_grad();
  const Var loss = model.loss(batch.inputs, batch.targets);  // scalar: mean over (B, T)
  into.loss.push_back(loss.value()());
  loss.backward();
  tape.reset();
  into.norms.push_back(grad_norms(model.named_parameters(), config.layers));
}

// Every (placement, depth, seed) measurement, depths = --depths and --layers.
std::map<Key, Runs> run_all(const ModelOptions& mo, const RunOptions& ro, const GradflowOptions& go) {
  std::set<std::size_t> depths(go.depths.begin(), go.depths.end());
  depths.insert(mo.layers);
  std::size_t units = 0;
  for (std::size_t L : depths) units += L * go.placements.size() * ro.seeds;
  StatusLine status("gradflow", units);
  std::map<Key, Runs> runs;
  for (std::size_t i = 0; i < ro.seeds; ++i) {
    const unsigned seed = mo.seed + static_cast<unsigned>(i);
    const nn::Batch batch = MarkovBatches(mo.vocab, mo.batch, mo.seq, seed).batch(0);
    for (const std::string& placement : go.placements)
      for (std::size_t L : depths) {
        ModelOptions o = mo;
        o.placement = placement;
        o.layers = L;
        o.seed = seed;
        measure(o.config(), batch, runs[{placement, L}]);
        status.advance(L, placement + " L=" + std::to_string(L) + " seed " + std::to_string(seed));
      }
  }
  status.finish();
  return runs;
}

// The value of a group for every seed; empty if the placement has no such group. layer -1: model-level.
std::vector<double> group_values(const Runs& runs, int layer, const std::string& group) {
  std::vector<double> v;
  for (const GradNorms& n : runs.norms) {
    const auto& m = layer < 0 ? n.model : n.blocks.at(static_cast<std::size_t>(layer));
    const auto it = m.find(group);
    if (it == m.end()) return {};
    v.push_back(it->second);
  }
  return v;
}

std::string cell(const std::vector<double>& values) { return values.empty() ? "-" : fmt(stat_of(values), 3); }

// ---- (a) the per-layer profile ----

// The groups one placement has, in print order.
std::vector<std::string> groups_of(const Runs& runs) {
  std::vector<std::string> groups;
  for (const std::string& g : block_groups())
    if (!group_values(runs, 0, g).empty()) groups.push_back(g);
  return groups;
}

// Rows: blocks 0..L-1; columns: the placement's groups (|g|_F, mean ± std over seeds).
Table profile_table(const Runs& runs, std::size_t layers) {
  const std::vector<std::string> groups = groups_of(runs);
  std::vector<std::string> columns = {"block"};
  columns.insert(columns.end(), groups.begin(), groups.end());
  Table t(columns);
  for (std::size_t i = 0; i < layers; ++i) {
    std::vector<std::string> row = {std::to_string(i)};
    for (const std::string& g : groups) row.push_back(cell(group_values(runs, static_cast<int>(i), g)));
    t.add_row(row);
  }
  return t;
}

const std::vector<std::string> model_groups = {"tok_emb", "pos_emb", "ln_f", "head", "total"};

// Rows: placements; columns: the loss at init and the model-level groups.
Table model_table(const std::map<Key, Runs>& runs, const GradflowOptions& go, std::size_t layers) {
  std::vector<std::string> columns = {"placement", "loss"};
  columns.insert(columns.end(), model_groups.begin(), model_groups.end());
  Table t(columns);
  for (const std::string& p : go.placements) {
    const Runs& r = runs.at({p, layers});
    std::vector<std::string> row = {p, fmt(stat_of(r.loss), 4)};
    for (const std::string& g : model_groups) row.push_back(cell(group_values(r, -1, g)));
    t.add_row(row);
  }
  return t;
}

// Long form: placement, layer ("model" for model-level groups), group, mean, std, n.
Table profile_csv(const std::map<Key, Runs>& runs, const GradflowOptions& go, std::size_t layers) {
  Table t({"placement", "layers", "layer", "group", "mean", "std", "n"});
  auto add = [&](const std::string& p, const std::string& layer, const std::string& g, const std::vector<double>& v) {
    if (v.empty()) return;
    const Stat s = stat_of(v);
    t.add_row({p, std::to_string(layers), layer, g, fmt(s.mean, 10), fmt(s.std, 10), std::to_string(s.n)});
  };
  for (const std::string& p : go.placements) {
    const Runs& r = runs.at({p, layers});
    for (std::size_t i = 0; i < layers; ++i)
      for (const std::string& g : block_groups()) add(p, std::to_string(i), g, group_values(r, static_cast<int>(i), g));
    for (const std::string& g : model_groups) add(p, "model", g, group_values(r, -1, g));
  }
  return t;
}

// A series for a log-scale plot, or nothing if some value is not positive (gnuplot cannot place it).
std::optional<Series> positive_series(const std::string& title, const std::vector<double>& x,
                                      const std::vector<Stat>& y) {
  Series s{title, x, {}, {}};
  for (const Stat& v : y) {
    if (!(v.mean > 0.0)) return std::nullopt;
    s.y.push_back(v.mean);
    s.err.push_back(v.std);
  }
  return s;
}

// x = block index, y = |g| of `group` (mean over seeds, error bars one std), one line per placement.
void draw_profile(const std::map<Key, Runs>& runs, const GradflowOptions& go, std::size_t layers,
                  const std::string& group, const std::string& label, const std::string& dir) {
  Plot plot{"", "block (0 = nearest the input)", label, false, true, {}};
  std::string skipped;
  for (const std::string& p : go.placements) {
    std::vector<double> x;
    std::vector<Stat> y;
    for (std::size_t i = 0; i < layers; ++i) {
      const std::vector<double> v = group_values(runs.at({p, layers}), static_cast<int>(i), group);
      if (v.empty()) break;
      x.push_back(static_cast<double>(i));
      y.push_back(stat_of(v));
    }
    if (auto s = positive_series(p, x, y); s && !x.empty())
      plot.series.push_back(*s);
    else
      skipped += (skipped.empty() ? p : ", " + p);
  }
  plot.title = "gradient norm per block at init, " + std::to_string(layers) + " layers";
  if (!skipped.empty()) plot.title += " (zero, not drawn: " + skipped + ")";
  draw(plot, dir, "profile_" + group);
}

// ---- (b) the depth scan ----

// The last block's |g| of `group` for every seed at depth L.
std::vector<double> last_block(const std::map<Key, Runs>& runs, const std::string& p, std::size_t L,
                               const std::string& group) {
  return group_values(runs.at({p, L}), static_cast<int>(L) - 1, group);
}

// The slope of log|g| on log L, fitted separately for each seed, over the depths from index `from` of
// --depths on (0: all of them; size - 2: the last two, the local slope at the deep end).
std::vector<double> slopes(const std::map<Key, Runs>& runs, const std::string& p, const GradflowOptions& go,
                           const std::string& group, std::size_t seeds, std::size_t from = 0) {
  const std::vector<std::size_t> depths(go.depths.begin() + static_cast<std::ptrdiff_t>(from), go.depths.end());
  std::vector<double> x, out;
  for (std::size_t L : depths) x.push_back(static_cast<double>(L));
  for (std::size_t s = 0; s < seeds; ++s) {
    std::vector<double> y;
    for (std::size_t L : depths) y.push_back(last_block(runs, p, L, group).at(s));
    out.push_back(loglog_fit(x, y).slope);
  }
  return out;
}

std::string slope_cell(const std::vector<double>& s) {
  for (double v : s)
    if (!std::isfinite(v)) return "n/a (a zero norm)";
  return fmt(stat_of(s), 3);
}

std::string xiong_prediction(const std::string& p) {
  if (p == "post") return "0";
  if (p == "pre") return "-0.5";
  return "-";
}

// Rows: placements; columns: L = each depth, then the fitted slopes (all depths; the last two) and
// Xiong et al.'s.
Table depth_table(const std::map<Key, Runs>& runs, const GradflowOptions& go, const std::string& group,
                  std::size_t seeds) {
  const std::size_t n = go.depths.size();
  std::vector<std::string> columns = {"placement"};
  for (std::size_t L : go.depths) columns.push_back("L=" + std::to_string(L));
  columns.push_back("slope (all L)");
  columns.push_back(n >= 2 ? "slope (L=" + std::to_string(go.depths[n - 2]) + ".." + std::to_string(go.depths[n - 1]) + ")"
                           : "slope (last two L)");
  columns.push_back("Xiong et al.");
  Table t(columns);
  for (const std::string& p : go.placements) {
    std::vector<std::string> row = {p};
    for (std::size_t L : go.depths) row.push_back(cell(last_block(runs, p, L, group)));
    row.push_back(n >= 2 ? slope_cell(slopes(runs, p, go, group, seeds)) : "-");
    row.push_back(n >= 2 ? slope_cell(slopes(runs, p, go, group, seeds, n - 2)) : "-");
    row.push_back(xiong_prediction(p));
    t.add_row(row);
  }
  return t;
}

// Long form of the scan, one row per seed: placement, depth, seed, loss, fc1, fc2.
Table depth_csv(const std::map<Key, Runs>& runs, const GradflowOptions& go, unsigned first_seed, std::size_t seeds) {
  Table t({"placement", "layers", "seed", "loss", "last_fc1_grad_norm", "last_fc2_grad_norm"});
  for (const std::string& p : go.placements)
    for (std::size_t L : go.depths)
      for (std::size_t s = 0; s < seeds; ++s)
        t.add_row({p, std::to_string(L), std::to_string(first_seed + s), fmt(runs.at({p, L}).loss.at(s), 10),
                   fmt(last_block(runs, p, L, "fc1").at(s), 10), fmt(last_block(runs, p, L, "fc2").at(s), 10)});
  return t;
}

Table slopes_csv(const std::map<Key, Runs>& runs, const GradflowOptions& go, std::size_t seeds) {
  Table t({"placement", "parameter", "depths", "slope_mean", "slope_std", "n", "xiong_prediction"});
  const std::size_t n = go.depths.size();
  for (const std::string& p : go.placements)
    for (const char* g : {"fc2", "fc1"})
      for (std::size_t from : {std::size_t{0}, n - 2}) {
        std::string depths;
        for (std::size_t i = from; i < n; ++i) {
          if (i > from) depths += ' ';
          depths += std::to_string(go.depths[i]);
        }
        const Stat s = stat_of(slopes(runs, p, go, g, seeds, from));
        t.add_row({p, std::string("last block ") + g + ".weight", depths, fmt(s.mean, 10), fmt(s.std, 10),
                   std::to_string(s.n), xiong_prediction(p)});
      }
  return t;
}

// Log-log: x = depth L, y = the last block's |g| of `group`; one line per placement, plus two guide
// lines through pre's first point with Xiong et al.'s slopes 0 and -1/2.
void draw_depth(const std::map<Key, Runs>& runs, const GradflowOptions& go, const std::string& group,
                const std::string& dir) {
  Plot plot{"", "layers L", "|dL/dW| of the last block's " + group + ".weight", true, true, {}};
  std::vector<double> x;
  for (std::size_t L : go.depths) x.push_back(static_cast<double>(L));
  std::string skipped;
  for (const std::string& p : go.placements) {
    std::vector<Stat> y;
    for (std::size_t L : go.depths) y.push_back(stat_of(last_block(runs, p, L, group)));
    if (auto s = positive_series(p, x, y))
      plot.series.push_back(*s);
    else
      skipped += (skipped.empty() ? p : ", " + p);
  }
  for (const Series& s : plot.series)
    if (s.title == "pre") {
      Series flat{"guide: slope 0", x, {}, {}}, half{"guide: slope -1/2", x, {}, {}};
      for (double L : x) {
        flat.y.push_back(s.y[0]);
        half.y.push_back(s.y[0] * std::pow(L / x[0], -0.5));
      }
      plot.series.push_back(flat);
      plot.series.push_back(half);
      break;
    }
  plot.title = "last block's " + group + ".weight gradient at init";
  if (!skipped.empty()) plot.title += " (zero, not drawn: " + skipped + ")";
  draw(plot, dir, "depth_" + group);
}

// Notes on what the numbers are, for placements whose FFN gradients were exactly zero.
void print_zero_notes(const std::map<Key, Runs>& runs, const GradflowOptions& go) {
  for (const std::string& p : go.placements) {
    bool all_zero = true;
    for (std::size_t L : go.depths)
      for (double v : last_block(runs, p, L, "fc2")) all_zero = all_zero && v == 0.0;
    if (all_zero && !go.depths.empty())
      std::printf("note: %s's fc2 gradient is exactly 0 at every depth: at init the branch is multiplied by a "
                  "scalar that is 0, so no gradient reaches the branch weights; no slope can be fitted.\n",
                  p.c_str());
  }
}

void report(const std::map<Key, Runs>& runs, const ModelOptions& mo, const RunOptions& ro, const GradflowOptions& go) {
  const std::size_t L = mo.layers;
  std::printf("\n(a) per-layer profile at init, %zu layers: |dL/dW|_F per parameter group (q, k, v, o, fc1, fc2: "
              "weights; ln: LN gains; rezero: the block's two scalars; block: every parameter of the block)\n",
              L);
  for (const std::string& p : go.placements)
    std::printf("\n%s\n%s", p.c_str(), profile_table(runs.at({p, L}), L).to_text().c_str());
  std::printf("\nloss at init and model-level gradient norms, %zu layers\n%s", L,
              model_table(runs, go, L).to_text().c_str());

  std::printf("\n(b) depth scan: the LAST block's FFN weight gradient |dL/dW|_F at init vs layers L; slope of "
              "log|g| on log L fitted per seed (Xiong et al. 2020, Theorem 1: Post-LN 0, Pre-LN -0.5)\n");
  std::printf("\nlast block's mlp.fc2.weight (W^{2,L} of Xiong et al.)\n%s",
              depth_table(runs, go, "fc2", ro.seeds).to_text().c_str());
  std::printf("\nlast block's mlp.fc1.weight (W^{1,L})\n%s", depth_table(runs, go, "fc1", ro.seeds).to_text().c_str());
  print_zero_notes(runs, go);

  const std::string dir = ro.out;
  std::filesystem::create_directories(dir);
  profile_csv(runs, go, L).write_csv(std::filesystem::path(dir) / "profile.csv");
  model_table(runs, go, L).write_csv(std::filesystem::path(dir) / "model.csv");
  if (!go.depths.empty()) {
    depth_csv(runs, go, mo.seed, ro.seeds).write_csv(std::filesystem::path(dir) / "depth.csv");
    if (go.depths.size() >= 2) slopes_csv(runs, go, ro.seeds).write_csv(std::filesystem::path(dir) / "slopes.csv");
    draw_depth(runs, go, "fc2", dir);
    draw_depth(runs, go, "fc1", dir);
  }
  draw_profile(runs, go, L, "block", "|dL/dW| of all the block's parameters", dir);
  draw_profile(runs, go, L, "fc2", "|dL/dW| of the block's mlp.fc2.weight", dir);
  std::printf("\nwrote %s/{profile,model,depth,slopes}.csv and the plots profile_block, profile_fc2, depth_fc2, "
              "depth_fc1 (.png, .svg)\n",
              dir.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  setup_process();
  CLI::App app{"Gradient norms at initialization per layer, parameter group and placement, and the last block's "
               "FFN gradient vs depth (Xiong et al. 2020, Theorem 1)."};
  ModelOptions mo;
  mo.layers = 8;  // the depth of the per-layer profile (a)
  add_model_options(app, mo);
  RunOptions ro;
  ro.out = "out/gradflow";
  add_run_options(app, ro);
  GradflowOptions go;
  app.add_option("--placements", go.placements, "placements to measure (comma-separated)")
      ->delimiter(',')
      ->check(CLI::IsMember({"post", "pre", "peri", "sandwich", "deepnorm", "rezero"}))
      ->capture_default_str();
  app.add_option("--depths", go.depths, "depths L of the last-block scan (b) (comma-separated)")
      ->delimiter(',')
      ->check(experiments::positive)
      ->capture_default_str();
  app.get_option("--layers")->description("depth of the per-layer profile (a)");
  app.get_option("--seed")->description("the first seed: every measurement is repeated for seeds --seed .. --seed + --seeds - 1 (model init and data)");
  app.get_option("--placement")->description("the placement of the --dump model (the measurements use --placements)");
  app.get_option("--dump")->description(
      "write the model of --placement, --layers and --seed at init, with its gradients on the batch that seed's "
      "measurement used, to this directory");
  std::string graph;
  add_graph_option(app, graph);
  finish_cli(app);
  CLI11_PARSE(app, argc, argv);
  std::sort(go.depths.begin(), go.depths.end());
  go.depths.erase(std::unique(go.depths.begin(), go.depths.end()), go.depths.end());

  try {
    if (!graph.empty()) {  // --graph: one forward and backward pass drawn, instead of the run
      write_model_graph(graph, mo);
      return 0;
    }
    std::printf("gradflow: vocab %zu, d_model %zu, heads %zu, d_ff %zu, init %s; one Markov batch of %zu x %zu per "
                "seed; seeds %u..%zu\n",
                mo.vocab, mo.d_model, mo.heads, mo.config().ff(), mo.init.c_str(), mo.batch, mo.seq, mo.seed,
                mo.seed + ro.seeds - 1);
    const std::map<Key, Runs> runs = run_all(mo, ro, go);
    report(runs, mo, ro, go);
    if (!ro.dump.empty()) {
      nn::TransformerLM model(mo.config());
      dump_model(ro.dump, model, mo.batch, mo.seq, mo.seed);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gradflow: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
