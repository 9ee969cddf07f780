// amplification: how far the output of a model at init moves when its parameters move a little, as a
// function of depth, for each normalization placement.
//
// The claim tested, Liu et al. 2020 ("Understanding the Difficulty of Training Transformers", section
// 4, the "amplification effect"): perturb the parameters of every residual branch, W -> W* = W + delta,
// so that each branch f_i changes by a similar amount; then the output changes by
//   Post-LN   Var[F(x, W) - F(x, W*)] = O(N)        (N sublayers): RMS change ~ N^(1/2)
//   Pre-LN    Var[F(x, W) - F(x, W*)] = O(log N)    RMS change ~ (log N)^(1/2)
// because in Post-LN every LN rescales the whole stream, so branch i stays a fixed fraction of it and
// its change reaches the output undiminished, while in Pre-LN branch i is about 1/i of the stream's
// variance. Liu et al. blame this heavy dependency on the branches, not vanishing gradients, for
// Post-LN's instability. (DeepNet, Wang et al. 2022, choose deepnorm's alpha and beta so that the
// model's update stays bounded, O(1), as N grows.)
//
// Three perturbations of a model at init (seed s), each measured on --batches fresh Markov batches:
//   random_all     delta_W = eps * rms(W) * Z for EVERY parameter, Z ~ N(0, 1) elementwise,
//                  rms(W) = sqrt(mean W_ij^2): each parameter moves by the fraction eps of its own scale.
//                  Parameters that are 0 at init (biases, LN biases, ReZero's scalars) have rms 0 and do
//                  not move; LN gains (rms 1), embeddings and the head do.
//   random_branch  the same Z, applied only to the residual branches' weight matrices (attn q, k, v, o
//                  and mlp fc1, fc2 of every block): Liu et al.'s setting, where LN has no parameters.
//   adam           delta_W = -eps * sign(dL/dW) for every parameter: Adam's first update at learning rate
//                  eps (on step 1, m / sqrt(v) = g / |g| elementwise), the gradient taken on the same
//                  batch. A coherent step, not a random one: its effects add up linearly, not in quadrature.
// and two outputs F:
//   logits         (B, T, V), what the loss sees
//   stream         (B, T, C), the last block's output: the residual stream before ln_f and the head
// The amplification is  A = RMS(F(W + delta) - F(W)) / eps,  the RMS over every element of the batch,
// averaged over the batches, then mean ± std over seeds. With eps = 1e-6 (the default) A is the size of
// the directional derivative of F along delta / eps. Measured (seed 0, L = 2, 8, 32, every placement and
// measure): A moves by at most 0.4% from eps 1e-6 to 1e-8; at 1e-5 Adam's step at L = 32 is already 3%
// off, and at 1e-3 far from linear (Post-LN, L = 32: A = 1.4e3 instead of 8.8e3). The random
// perturbations stay within 2% of their small-eps values even at 1e-3. Try --eps 1e-3 to see it.
//
//   build/bin/amplification              the defaults: 32 s wall, 27 s user on 2 shared cores
//   build/bin/amplification --placements post,pre --depths 2,4,8,16,32,64 --seeds 5
#include <array>

#include "experiments/lib/experiment.hpp"
#include "analysis/probe.hpp"
#include "analysis/stream_split.hpp"
#include "experiments/lib/interrupt.hpp"
#include "nn/init.hpp"

namespace {

// The measurements: (perturbation, output) pairs, index = 2 * perturbation + output.
constexpr std::size_t random_all = 0, random_branch = 1, adam = 2, n_perturbations = 3;
constexpr std::size_t logits = 0, stream = 1, n_outputs = 2;
constexpr std::size_t n_measures = n_perturbations * n_outputs;
const std::array<const char*, n_perturbations> perturbation_names = {"random_all", "random_branch", "adam"};
const std::array<const char*, n_outputs> output_names = {"logits", "stream"};
const std::array<const char*, n_perturbations> perturbation_titles = {
    "random_all: every parameter W += eps * rms(W) * N(0,1)",
    "random_branch: only the branch weights (attn q, k, v, o; mlp fc1, fc2) W += eps * rms(W) * N(0,1)",
    "adam: Adam's first step, every parameter W -= eps * sign(dL/dW) (coherent: the layers' effects add up "
    "linearly, not in quadrature as the random laws assume)"};

std::size_t index_of(std::size_t perturbation, std::size_t output) { return perturbation * n_outputs + output; }
std::string measure_name(std::size_t m) {
  std::string name = perturbation_names[m / n_outputs];
  name += '_';
  name += output_names[m % n_outputs];
  return name;
}

using Amplification = std::array<double, n_measures>;  // A for each measure

// What one cell measured: its model's A for each measure, averaged over the batches.
struct AmplificationRun {
  Amplification a{};
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(AmplificationRun, a)  // its JSON in a shard: "a", one number per measure

// ---- one model ----

// F on a batch: the logits (B, T, V) and the last block's output (B, T, C), copied out of the tape.
using Outputs = std::array<Array, n_outputs>;

Outputs last_outputs(const nn::TransformerLM& model) {
  return {model.last.logits.value(), model.blocks.back()->last.out.value()};
}

// F with the current parameters, recording nothing for backward.
Outputs forward(nn::TransformerLM& model, const nn::Batch& batch) {
  Tape& tape = Tape::current();
  NoGradScope no_grad(tape);
  tape.reset();
  model.logits(batch.inputs);
  Outputs out = last_outputs(model);
  tape.reset();
  return out;
}

// sqrt(mean (a - b)^2)
double rms_diff(const Array& a, const Array& b) {
  double ss = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) ss += (a.flat(i) - b.flat(i)) * (a.flat(i) - b.flat(i));
  return std::sqrt(ss / static_cast<double>(a.size()));
}

bool is_branch_weight(const std::string& name) {
  const std::string g = block_group(name);
  return g == "q" || g == "k" || g == "v" || g == "o" || g == "fc1" || g == "fc2";
}

// W += eps * rms(W) * Z, Z ~ N(0, 1) elementwise, for every parameter or only the branch weights. Z is
// drawn for every parameter either way, so one rng seed gives both perturbations the same Z.
void perturb_random(const std::vector<nn::NamedParameter>& params, double eps, bool branch_only,
                    std::mt19937_64 rng) {
  for (const nn::NamedParameter& p : params) {
    Parameter w = p.parameter;
    const Array z = nn::normal(w.shape(), 0.0, 1.0, rng);
    if (branch_only && !is_branch_weight(p.name)) continue;
    w.value() += z * (eps * rms(w.value()));
  }
}

// W -= eps * sign(dL/dW): Adam's first update at learning rate eps.
void perturb_adam(const std::vector<nn::NamedParameter>& params, double eps) {
  for (const nn::NamedParameter& p : params) {
    Parameter w = p.parameter;
    Array& v = w.value();
    const Array& g = w.grad();
    for (std::size_t i = 0; i < v.size(); ++i) v.flat(i) -= eps * static_cast<double>((g.flat(i) > 0) - (g.flat(i) < 0));
  }
}

void restore(const std::vector<nn::NamedParameter>& params, const std::vector<Array>& saved) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    Parameter w = params[i].parameter;
    w.value() = saved[i];
  }
}

// A for each measure, averaged over the batches, for one model at init.
AmplificationRun measure(const nn::ModelConfig& config, const MarkovBatches& data, double eps, std::size_t batches) {
  nn::TransformerLM model(config);
  const std::vector<nn::NamedParameter> params = model.named_parameters();
  std::vector<Array> saved;
  for (const nn::NamedParameter& p : params) saved.push_back(p.parameter.value());
  Tape& tape = Tape::current();
  Amplification sum{};
  for (std::size_t j = 0; j < batches; ++j) {
    stop_if_requested(j);  // a batch is this loop's step
    const nn::Batch batch = data.batch(j);
    // F(W) and dL/dW on this batch.
    tape.reset();
    model.zero_grad();
    const Var loss = model.loss(batch.inputs, batch.targets);
    const Outputs base = last_outputs(model);
    loss.backward();
    tape.reset();

    std::seed_seq seq{config.seed, static_cast<unsigned>(j), 0x616d70u};
    const std::mt19937_64 rng(seq);  // the same Z for random_all and random_branch
    for (std::size_t p = 0; p < n_perturbations; ++p) {
      if (p == adam)
        perturb_adam(params, eps);
      else
        perturb_random(params, eps, p == random_branch, rng);
      const Outputs moved = forward(model, batch);
      restore(params, saved);
      for (std::size_t o = 0; o < n_outputs; ++o)
        sum[index_of(p, o)] += rms_diff(moved[o], base[o]) / eps;
    }
  }
  AmplificationRun run;
  for (std::size_t m = 0; m < n_measures; ++m) run.a[m] = sum[m] / static_cast<double>(batches);
  return run;
}

// ---- the report ----

// What the report reads: the grid (placement, layers, seed), its runs and its depths.
struct Scan {
  const Grid& grid;
  const std::vector<AmplificationRun>& runs;
  const std::vector<std::size_t>& depths;
  std::size_t seeds;
  const std::vector<std::string>& placements() const { return grid.labels(0); }
  // A of measure m for every seed of placement p (its index) at depth L (one of `depths`).
  std::vector<double> values(std::size_t p, std::size_t L, std::size_t m) const {
    std::vector<double> v;
    for (const AmplificationRun* r : seeds_of(runs, grid, {p, index_in(depths, L)})) v.push_back(r->a[m]);
    return v;
  }
  // Per seed: the slope of log A on log L over the depths from index `from` on.
  std::vector<double> slopes(std::size_t p, std::size_t m, std::size_t from) const {
    return depth_slopes(depths, from, seeds, [&](std::size_t L, std::size_t s) { return values(p, L, m).at(s); });
  }
};

// Per seed: A at the deepest L over A at the shallowest.
std::vector<double> growth(const Scan& s, std::size_t p, std::size_t m) {
  const std::vector<double> first = s.values(p, s.depths.front(), m), last = s.values(p, s.depths.back(), m);
  std::vector<double> out;
  for (std::size_t i = 0; i < first.size(); ++i) out.push_back(last[i] / first[i]);
  return out;
}

// What the papers predict for A(L_max) / A(L_min), Liu et al.'s variance laws read as RMS ratios:
// Var O(L) gives sqrt(L_max / L_min), Var O(log L) gives sqrt(ln L_max / ln L_min).
std::string predictions(const std::vector<std::size_t>& d) {
  const double lo = static_cast<double>(d.front()), hi = static_cast<double>(d.back());
  std::string s = "predicted A(" + std::to_string(d.back()) + ") / A(" + std::to_string(d.front()) +
                  "): post " + fmt(std::sqrt(hi / lo), 3) + " (Liu et al., Var O(L))";
  if (lo > 1.0) s += ", pre " + fmt(std::sqrt(std::log(hi) / std::log(lo)), 3) + " (Liu et al., Var O(log L))";
  s += ", deepnorm bounded (Wang et al., O(1))";
  return s;
}

// Rows: placement x output; columns: each depth, slopes (all depths; the last two), growth.
Table perturbation_table(const Scan& s, std::size_t pert) {
  const std::vector<std::size_t>& d = s.depths;
  const std::size_t n = d.size();
  std::vector<std::string> columns = {"placement", "output"};
  for (std::size_t L : d) columns.push_back("L=" + std::to_string(L));
  columns.push_back("slope (all L)");
  columns.push_back("slope " + std::to_string(d[n - 2]) + ".." + std::to_string(d[n - 1]));
  columns.push_back("A(" + std::to_string(d[n - 1]) + ")/A(" + std::to_string(d[0]) + ")");
  Table t(columns);
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    for (std::size_t o = 0; o < n_outputs; ++o) {
      const std::size_t m = index_of(pert, o);
      std::vector<std::string> row = {s.placements()[p], output_names[o]};
      for (std::size_t L : d) row.push_back(fmt(stat_of(s.values(p, L, m)), 3));
      row.push_back(finite_cell(s.slopes(p, m, 0), "n/a (A = 0)"));
      row.push_back(finite_cell(s.slopes(p, m, n - 2), "n/a (A = 0)"));
      row.push_back(finite_cell(growth(s, p, m), "n/a (A = 0)"));
      t.add_row(row);
    }
  return t;
}

// Long form, one row per seed.
Table results_csv(const Scan& s, unsigned first_seed) {
  std::vector<std::string> columns = {"placement", "layers", "seed"};
  for (std::size_t m = 0; m < n_measures; ++m) columns.push_back(measure_name(m));
  Table t(columns);
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    for (std::size_t L : s.depths)
      for (std::size_t i = 0; i < s.seeds; ++i) {
        std::vector<std::string> row = {s.placements()[p], std::to_string(L), std::to_string(first_seed + i)};
        for (std::size_t m = 0; m < n_measures; ++m) row.push_back(fmt(s.values(p, L, m).at(i), 10));
        t.add_row(row);
      }
  return t;
}

Table slopes_csv(const Scan& s) {
  Table t({"placement", "measure", "depths", "slope_mean", "slope_std", "n"});
  const std::size_t n = s.depths.size();
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    for (std::size_t m = 0; m < n_measures; ++m)
      for (std::size_t from : {std::size_t{0}, n - 2}) {
        const Stat st = stat_of(s.slopes(p, m, from));
        t.add_row({s.placements()[p], measure_name(m), depths_text(s.depths, from), fmt(st.mean, 10), fmt(st.std, 10),
                   std::to_string(st.n)});
      }
  return t;
}

// Log-log: A vs L, one line per placement, plus guides through post's first point (A ~ L^(1/2), Liu et
// al.'s Var O(L)) and through pre's first point (A ~ (ln L)^(1/2), Var O(log L)).
void draw_measure(const Scan& s, std::size_t m, const std::string& dir) {
  Plot plot{measure_name(m), "layers L", "A = RMS(F(W + delta) - F(W)) / eps", true, true, {}};
  std::vector<double> x;
  for (std::size_t L : s.depths) x.push_back(static_cast<double>(L));
  for (std::size_t p = 0; p < s.placements().size(); ++p)
    plot.series.push_back(stat_line(s.placements()[p], x, [&](std::size_t i) { return s.values(p, s.depths[i], m); }));
  const std::string skipped = drop_nonpositive(plot.series);
  std::vector<Series> guides;
  for (const Series& line : plot.series) {
    const bool post = line.title == "post";
    if ((!post && line.title != "pre") || (!post && !(x[0] > 1.0))) continue;
    Series g{post ? "guide: L^(1/2)" : "guide: (ln L)^(1/2)", x, {}, {}};
    for (double L : x)
      g.y.push_back(line.y[0] * (post ? std::sqrt(L / x[0]) : std::sqrt(std::log(L) / std::log(x[0]))));
    guides.push_back(g);
  }
  plot.series.insert(plot.series.end(), guides.begin(), guides.end());
  if (!skipped.empty()) plot.title += " (zero, not drawn: " + skipped + ")";
  draw(plot, dir, measure_name(m));
}

void report(const Scan& s, unsigned first_seed, double eps, std::size_t batches, const std::filesystem::path& dir) {
  std::printf("\nA = RMS(F(W + delta) - F(W)) / eps at init, eps = %g, mean over %zu batch(es) per seed, mean ± std "
              "over %zu seeds; slopes of log A on log L and ratios fitted per seed. F: logits (B, T, V), or stream = "
              "the last block's output (B, T, C).\n%s\n",
              eps, batches, s.seeds, predictions(s.depths).c_str());
  for (std::size_t p = 0; p < n_perturbations; ++p)
    std::printf("\n%s\n%s", perturbation_titles[p], perturbation_table(s, p).to_text().c_str());

  results_csv(s, first_seed).write_csv(dir / "amplification.csv");
  slopes_csv(s).write_csv(dir / "slopes.csv");
  for (std::size_t p = 0; p < n_perturbations; ++p)
    perturbation_table(s, p).write_csv(dir / (std::string(perturbation_names[p]) + ".csv"));
  for (std::size_t m = 0; m < n_measures; ++m) draw_measure(s, m, dir.string());
  std::printf("\nwrote %s/: amplification.csv (every seed), slopes.csv, {random_all,random_branch,adam}.csv (the "
              "tables), and the plots {random_all,random_branch,adam}_{logits,stream} (.png, .svg)\n",
              dir.string().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Experiment ex("amplification", "How far the output of a model at init moves under a small perturbation of its "
                "parameters, vs depth and placement (Liu et al. 2020's amplification effect).", "out/amplification");
  std::vector<std::size_t> depths = {2, 4, 8, 16, 32};
  double eps = 1e-6;
  std::size_t batches = 1;
  add_flag(ex.app, "--depths", depths, "depths L to measure (comma-separated, at least two)", Whole{1});
  add_flag(ex.app, "--eps", eps, "perturbation size: eps * rms(W) * N(0,1), and -eps * sign(dL/dW)", RealRange::above(0));
  add_flag(ex.app, "--batches", batches, "batches per seed the amplification is averaged over", Whole{1});
  describe(ex.app, "--layers", "depth of the --dump model (the measurements use --depths)");
  describe(ex.app, "--dump", "write the unperturbed model of --placement, --layers and --seed at init, "
                                           "with its gradients on that seed's first batch (whose signs give the adam "
                                           "perturbation), to this directory");
  return ex.main(argc, argv, [&] {
    const ModelOptions& mo = ex.model;
    sort_unique(depths);
    if (depths.size() < 2) throw FlagError("--depths needs at least two different depths to fit a slope");
    nn::ModelConfig largest = mo.config();
    largest.layers = depths.back();
    ex.check_memory(largest, 1, ex.html_wanted(), ex.placements.size() * depths.size() * ex.seeds, 0.0);
    std::printf("amplification: vocab %zu, d_model %zu, heads %zu, d_ff %zu, init %s; %zu Markov batch(es) of %zu x "
                "%zu per seed; seeds %u..%zu\n",
                mo.vocab, mo.d_model, mo.heads, mo.config().ff(), mo.init.c_str(), batches, mo.batch, mo.seq, mo.seed,
                mo.seed + ex.seeds - 1);
    std::vector<MarkovBatches> data;  // per seed
    for (unsigned seed : ex.seed_list()) data.emplace_back(mo.vocab, mo.batch, mo.seq, seed);
    Grid grid;
    grid.axis("placement", ex.placements).axis("layers", labels(depths)).axis("seed", labels(ex.seed_list()));
    const auto runs = run_depths<AmplificationRun>(ex, grid, [&](const Cell& c, Tick&) {
      ModelOptions o = ex.cell_model(c);
      if (c["seed"] == 0) ex.record_init_pass(c.index, grid.describe(c.index), o.config(), data[c["seed"]].batch(0));
      const AmplificationRun r = measure(o.config(), data[c["seed"]], eps, batches);
      // Before any file: a perturbation that overflowed (inf, NaN) or was lost in rounding (every A
      // exactly 0; one may be 0 by design: rezero's branches are off at init) measures nothing.
      bool all_zero = true;
      for (std::size_t m = 0; m < n_measures; ++m) {
        const double a = r.a[m];
        all_zero = all_zero && a == 0.0;
        if (!std::isfinite(a))
          throw FlagError("--eps " + fmt(eps) + " gives A = " + fmt(a) + " for " + measure_name(m) + " in cell " +
                          grid.describe(c.index) + ": the perturbation leaves the range of a double; choose an "
                          "--eps such as 1e-6 (the default)");
      }
      if (all_zero)
        throw FlagError("--eps " + fmt(eps) + " gives A = 0 for every measure in cell " + grid.describe(c.index) +
                        ": the perturbation is lost in rounding; choose an --eps such as 1e-6 (the default)");
      return r;
    });
    if (runs) report(Scan{grid, *runs, depths, ex.seeds}, mo.seed, eps, batches, ex.out);
  });
}
