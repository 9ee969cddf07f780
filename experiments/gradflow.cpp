// gradflow: where the gradient is at initialization, for each normalization placement.
//
//   (a) the per-layer profile: |dL/dW|_F for every parameter group of every block (attention q, k, v,
//       o weights, fc1, fc2, LN gains), the embeddings and the head, of a model of --layers blocks;
//   (b) the depth scan: the LAST block's FFN weight gradients |dL/dW^{2,L}|_F (fc2.weight) and
//       |dL/dW^{1,L}|_F (fc1.weight) for depths L in --depths, with the slope of log|g| on log L.
//
// The claim tested, Xiong et al. 2020 ("On Layer Normalization in the Transformer Architecture"),
// Theorem 1: at initialization
//   Post-LN   |dL/dW^{2,L}|_F <= O(d sqrt(ln d))          a bound that does not grow with L: slope 0
//   Pre-LN    |dL/dW^{2,L}|_F <= O(d sqrt(ln d / L))      a bound that shrinks like L^(-1/2): slope -0.5
// (upper bounds, with high probability over the init: a measured gradient below its bound agrees
// with the theorem whatever its own slope; the bounds' slopes are what the table prints beside it)
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
#include <map>
#include <set>

#include "experiments/lib/experiment.hpp"
#include "analysis/probe.hpp"
#include "experiments/lib/graph.hpp"

namespace {

// One model at init on one batch: its loss, and the Frobenius norms of its gradients by group (probe.hpp).
struct FlowRun {
  double loss = NAN;
  std::map<std::string, std::vector<double>> blocks;  // group -> |dL/dW|_F of each block, block 0 first
  std::map<std::string, double> model;                // model-level group -> |dL/dW|_F
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FlowRun, loss, blocks, model)

FlowRun measure(const nn::ModelConfig& config, const nn::Batch& batch) {
  nn::TransformerLM model(config);
  Tape& tape = Tape::current();
  tape.reset();
  model.zero_grad();
  const Var loss = model.loss(batch.inputs, batch.targets);  // scalar: mean over (B, T)
  FlowRun run;
  run.loss = loss.value()();
  loss.backward();
  tape.reset();
  const GradNorms n = grad_norms(model.named_parameters(), config.layers);
  for (const auto& block : n.blocks)
    for (const auto& [group, value] : block) run.blocks[group].push_back(value);
  run.model = n.model;
  return run;
}

using Runs = std::vector<const FlowRun*>;  // one (placement, depth): a run per seed

// What the report reads: the runs of the grid (placement, layers, seed), the depths measured (the
// layers axis) and those of the scan (b).
struct Scan : GridRuns<FlowRun> {
  const std::vector<std::size_t>& layers;
  const std::vector<std::size_t>& depths;
  std::size_t seeds;
  const std::vector<std::string>& placements() const { return grid.labels(0); }
  // The seeds of placement p (its index) at depth L (one of `layers`).
  Runs at(std::size_t p, std::size_t L) const { return GridRuns::seeds({p, index_in(layers, L)}); }
};

// The value of a group for every seed; empty if the placement has no such group. layer -1: model-level.
std::vector<double> group_values(const Runs& runs, int layer, const std::string& group) {
  std::vector<double> v;
  for (const FlowRun* r : runs) {
    if (layer < 0) {
      const auto it = r->model.find(group);
      if (it == r->model.end()) return {};
      v.push_back(it->second);
    } else {
      const auto it = r->blocks.find(group);
      if (it == r->blocks.end()) return {};
      v.push_back(it->second.at(static_cast<std::size_t>(layer)));
    }
  }
  return v;
}

std::string cell(const std::vector<double>& values) { return values.empty() ? "-" : fmt(stat_of(values), 3); }

// ---- (a) the per-layer profile ----

// Rows: blocks 0..L-1; columns: the groups the placement has (|g|_F, mean ± std over seeds).
Table profile_table(const Runs& runs, std::size_t layers) {
  std::vector<std::string> groups, columns = {"block"};
  for (const std::string& g : block_groups())
    if (!group_values(runs, 0, g).empty()) groups.push_back(g);
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
Table model_table(const Scan& s, std::size_t layers) {
  std::vector<std::string> columns = {"placement", "loss"};
  columns.insert(columns.end(), model_groups.begin(), model_groups.end());
  Table t(columns);
  for (std::size_t p = 0; p < s.placements().size(); ++p) {
    const Runs r = s.at(p, layers);
    std::vector<double> loss;
    for (const FlowRun* x : r) loss.push_back(x->loss);
    std::vector<std::string> row = {s.placements()[p], fmt(stat_of(loss), 4)};
    for (const std::string& g : model_groups) row.push_back(cell(group_values(r, -1, g)));
    t.add_row(row);
  }
  return t;
}

// Long form: placement, layer ("model" for model-level groups), group, mean, std, n.
Table profile_csv(const Scan& s, std::size_t layers) {
  Table t({"placement", "layers", "layer", "group", "mean", "std", "n"});
  auto add = [&](std::size_t p, const std::string& layer, const std::string& g, const std::vector<double>& v) {
    if (v.empty()) return;
    const Stat st = stat_of(v);
    t.add_row({s.placements()[p], std::to_string(layers), layer, g, fmt(st.mean, 10), fmt(st.std, 10), std::to_string(st.n)});
  };
  for (std::size_t p = 0; p < s.placements().size(); ++p) {
    const Runs r = s.at(p, layers);
    for (std::size_t i = 0; i < layers; ++i)
      for (const std::string& g : block_groups()) add(p, std::to_string(i), g, group_values(r, static_cast<int>(i), g));
    for (const std::string& g : model_groups) add(p, "model", g, group_values(r, -1, g));
  }
  return t;
}

// x = block index, y = |g| of `group` (mean over seeds, error bars one std), one line per placement.
void draw_profile(const Scan& s, std::size_t layers, const std::string& group, const std::string& label,
                  const std::string& dir) {
  Plot plot{"", "block (0 = nearest the input)", label, false, true, {}};
  for (std::size_t p = 0; p < s.placements().size(); ++p) {
    Series line{s.placements()[p], {}, {}, {}};
    for (std::size_t i = 0; i < layers; ++i) {
      const std::vector<double> v = group_values(s.at(p, layers), static_cast<int>(i), group);
      if (v.empty()) break;
      line.x.push_back(static_cast<double>(i));
      line.y.push_back(stat_of(v).mean);
      line.err.push_back(stat_of(v).std);
    }
    plot.series.push_back(line);
  }
  const std::string skipped = drop_nonpositive(plot.series);
  plot.title = "gradient norm per block at init, " + std::to_string(layers) + " layers";
  if (!skipped.empty()) plot.title += " (zero, not drawn: " + skipped + ")";
  draw(plot, dir, "profile_" + group);
}

// ---- (b) the depth scan ----

// The last block's |g| of `group` for every seed at depth L.
std::vector<double> last_block(const Scan& s, std::size_t p, std::size_t L, const std::string& group) {
  return group_values(s.at(p, L), static_cast<int>(L) - 1, group);
}

// The slope of log|g| on log L, fitted separately for each seed, over the depths from index `from` of
// --depths on (0: all of them; size - 2: the last two, the local slope at the deep end).
std::vector<double> slopes(const Scan& s, std::size_t p, const std::string& group, std::size_t from = 0) {
  return depth_slopes(s.depths, from, s.seeds,
                      [&](std::size_t L, std::size_t seed) { return last_block(s, p, L, group).at(seed); });
}

std::string xiong_prediction(const std::string& p) {
  if (p == "post") return "0";
  if (p == "pre") return "-0.5";
  return "-";
}

// Rows: placements; columns: L = each depth, then the fitted slopes (all depths; the last two) and
// that of Xiong et al.'s upper bound.
Table depth_table(const Scan& s, const std::string& group) {
  const std::size_t n = s.depths.size();
  std::vector<std::string> columns = {"placement"};
  for (std::size_t L : s.depths) columns.push_back("L=" + std::to_string(L));
  columns.push_back("slope (all L)");
  columns.push_back(n >= 2 ? "slope (L=" + std::to_string(s.depths[n - 2]) + ".." + std::to_string(s.depths[n - 1]) + ")"
                           : "slope (last two L)");
  columns.push_back("bound's slope");
  Table t(columns);
  for (std::size_t p = 0; p < s.placements().size(); ++p) {
    std::vector<std::string> row = {s.placements()[p]};
    for (std::size_t L : s.depths) row.push_back(cell(last_block(s, p, L, group)));
    row.push_back(n >= 2 ? finite_cell(slopes(s, p, group), "n/a (a zero norm)") : "-");
    row.push_back(n >= 2 ? finite_cell(slopes(s, p, group, n - 2), "n/a (a zero norm)") : "-");
    row.push_back(xiong_prediction(s.placements()[p]));
    t.add_row(row);
  }
  return t;
}

// Long form of the scan, one row per seed: placement, depth, seed, loss, fc1, fc2.
Table depth_csv(const Scan& s, unsigned first_seed) {
  Table t({"placement", "layers", "seed", "loss", "last_fc1_grad_norm", "last_fc2_grad_norm"});
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    for (std::size_t L : s.depths)
      for (std::size_t i = 0; i < s.seeds; ++i)
        t.add_row({s.placements()[p], std::to_string(L), std::to_string(first_seed + i), fmt(s.at(p, L).at(i)->loss, 10),
                   fmt(last_block(s, p, L, "fc1").at(i), 10), fmt(last_block(s, p, L, "fc2").at(i), 10)});
  return t;
}

Table slopes_csv(const Scan& s) {
  Table t({"placement", "parameter", "depths", "slope_mean", "slope_std", "n", "xiong_prediction"});
  const std::size_t n = s.depths.size();
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    for (const char* g : {"fc2", "fc1"})
      for (std::size_t from : {std::size_t{0}, n - 2}) {
        const Stat st = stat_of(slopes(s, p, g, from));
        t.add_row({s.placements()[p], std::string("last block ") + g + ".weight", depths_text(s.depths, from),
                   fmt(st.mean, 10), fmt(st.std, 10), std::to_string(st.n), xiong_prediction(s.placements()[p])});
      }
  return t;
}

// Log-log: x = depth L, y = the last block's |g| of `group`; one line per placement, plus two guide
// lines through pre's first point with Xiong et al.'s slopes 0 and -1/2.
void draw_depth(const Scan& s, const std::string& group, const std::string& dir) {
  Plot plot{"", "layers L", "|dL/dW| of the last block's " + group + ".weight", true, true, {}};
  std::vector<double> x;
  for (std::size_t L : s.depths) x.push_back(static_cast<double>(L));
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    plot.series.push_back(
        stat_line(s.placements()[p], x, [&](std::size_t i) { return last_block(s, p, s.depths[i], group); }));
  const std::string skipped = drop_nonpositive(plot.series);
  for (const Series& line : plot.series)
    if (line.title == "pre") {
      Series flat{"guide: slope 0", x, {}, {}}, half{"guide: slope -1/2", x, {}, {}};
      for (double L : x) {
        flat.y.push_back(line.y[0]);
        half.y.push_back(line.y[0] * std::pow(L / x[0], -0.5));
      }
      plot.series.push_back(flat);
      plot.series.push_back(half);
      break;
    }
  plot.title = "last block's " + group + ".weight gradient at init";
  if (!skipped.empty()) plot.title += " (zero, not drawn: " + skipped + ")";
  draw(plot, dir, "depth_" + group);
}

void report(const Scan& s, std::size_t L, unsigned first_seed, const std::string& dir) {
  std::printf("\n(a) per-layer profile at init, %zu layers: |dL/dW|_F per parameter group (q, k, v, o, fc1, fc2: "
              "weights; ln: LN gains; rezero: the block's two scalars; block: every parameter of the block)\n",
              L);
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    std::printf("\n%s\n%s", s.placements()[p].c_str(), profile_table(s.at(p, L), L).to_text().c_str());
  std::printf("\nloss at init and model-level gradient norms, %zu layers\n%s", L, model_table(s, L).to_text().c_str());

  std::printf("\n(b) depth scan: the LAST block's FFN weight gradient |dL/dW|_F at init vs layers L; slope of "
              "log|g| on log L fitted per seed (Xiong et al. 2020, Theorem 1, upper bounds: Post-LN O(d sqrt(ln d)), "
              "slope 0; Pre-LN O(d sqrt(ln d / L)), slope -0.5)\n");
  std::printf("\nlast block's mlp.fc2.weight (W^{2,L} of Xiong et al.)\n%s", depth_table(s, "fc2").to_text().c_str());
  std::printf("\nlast block's mlp.fc1.weight (W^{1,L})\n%s", depth_table(s, "fc1").to_text().c_str());
  for (std::size_t p = 0; p < s.placements().size(); ++p) {  // notes on placements whose FFN gradients were exactly zero
    bool all_zero = !s.depths.empty();
    for (std::size_t L : s.depths)
      for (double v : last_block(s, p, L, "fc2")) all_zero = all_zero && v == 0.0;
    if (all_zero)
      std::printf("note: %s's fc2 gradient is exactly 0 at every depth: at init the branch is multiplied by a "
                  "scalar that is 0, so no gradient reaches the branch weights; no slope can be fitted.\n",
                  s.placements()[p].c_str());
  }

  profile_csv(s, L).write_csv(std::filesystem::path(dir) / "profile.csv");
  model_table(s, L).write_csv(std::filesystem::path(dir) / "model.csv");
  if (!s.depths.empty()) {
    depth_csv(s, first_seed).write_csv(std::filesystem::path(dir) / "depth.csv");
    if (s.depths.size() >= 2) slopes_csv(s).write_csv(std::filesystem::path(dir) / "slopes.csv");
    draw_depth(s, "fc2", dir);
    draw_depth(s, "fc1", dir);
  }
  draw_profile(s, L, "block", "|dL/dW| of all the block's parameters", dir);
  draw_profile(s, L, "fc2", "|dL/dW| of the block's mlp.fc2.weight", dir);
  std::printf("\nwrote %s/{profile,model,depth,slopes}.csv and the plots profile_block, profile_fc2, depth_fc2, "
              "depth_fc1 (.png, .svg)\n",
              dir.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Experiment ex("gradflow", "Gradient norms at initialization per layer, parameter group and placement, and the last "
                "block's FFN gradient vs depth (Xiong et al. 2020, Theorem 1).", "out/gradflow");
  ex.model.layers = 8;  // the depth of the per-layer profile (a)
  std::vector<std::size_t> depths = {2, 4, 8, 16, 32};
  add_flag(ex.app, "--depths", depths, "depths L of the last-block scan (b) (comma-separated)", Whole{1});
  describe(ex.app, "--layers", "depth of the per-layer profile (a)");
  return ex.main(argc, argv, [&] {
    const ModelOptions& mo = ex.model;
    sort_unique(depths);
    std::set<std::size_t> measured(depths.begin(), depths.end());
    measured.insert(mo.layers);
    const std::vector<std::size_t> all(measured.begin(), measured.end());
    nn::ModelConfig largest = mo.config();
    largest.layers = all.back();
    ex.check_memory(largest, 0, ex.html_wanted(), ex.placements.size() * all.size() * ex.seeds, 0.0);
    std::printf("gradflow: vocab %zu, d_model %zu, heads %zu, d_ff %zu, init %s; one Markov batch of %zu x %zu per "
                "seed; seeds %u..%zu\n",
                mo.vocab, mo.d_model, mo.heads, mo.config().ff(), mo.init.c_str(), mo.batch, mo.seq, mo.seed,
                mo.seed + ex.seeds - 1);
    std::vector<nn::Batch> batches;  // per seed: the batch --dump would write for it
    for (unsigned seed : ex.seed_list()) batches.push_back(MarkovBatches(mo.vocab, mo.batch, mo.seq, seed).batch(0));
    Grid grid;
    grid.axis("placement", ex.placements).axis("layers", labels(all)).axis("seed", labels(ex.seed_list()));
    const auto runs = run_depths<FlowRun>(ex, grid, [&](const Cell& c, Tick&) {
      ModelOptions o = ex.cell_model(c);
      if (c["seed"] == 0) ex.record_init_pass(c.index, grid.describe(c.index), o.config(), batches[c["seed"]]);
      return measure(o.config(), batches[c["seed"]]);
    });
    if (runs) report(Scan{{*runs, grid}, all, depths, ex.seeds}, mo.layers, mo.seed, ex.out);
  });
}
