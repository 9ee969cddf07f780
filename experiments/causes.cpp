// causes: why Post-LN gets stuck without warmup, by intervention. At the learning rate where
// warmup's grid finds Post-LN without warmup stuck at the unigram loss and Pre-LN training (lr 1e-2 on
// the Markov corpus, docs/pre-vs-post-ln.md section 4), each row changes one thing and trains every
// seed again from scratch:
//   none              Adam(0.9, 0.98, eps 1e-8), constant lr, no warmup: the failing run itself
//   ln-undo-gain ... freeze-ln   one backward-pass intervention in every block (nn/interventions.hpp):
//                     ln-undo-gain removes the 1/sigma of each LN's backward (Wang et al. 2022: the
//                     gradient vanishes through the LNs); ln-detach-stats makes the LN statistics
//                     constants; detach-skip / detach-branch send no gradient along the skip / the branch
//                     input of each residual add; freeze-ln keeps the LN gains and biases at init
//   beta2 B           Adam's beta2 = B (--adam-beta2, default 0.999) instead of 0.98
//   radam             rectified Adam (Liu et al. 2019): no adaptive step while its variance is intractable
//   hold N            N steps at lr 0 that still update Adam's moments (--hold, default 20), then constant
//   warmup W          linear warmup over W steps (--warmups, default 5, 20, 100)
// Every other row is the "none" run with that one change, so a row that trains where "none" is stuck is
// an intervention's result, not a correlation. The columns: how many seeds trained / got stuck /
// diverged (warmup's verdicts, experiments/lib/training.hpp), the final held-out loss (mean ± sd over
// the seeds), and what the change did to the gradients and updates:
//   g0/gL      |dL/dW| of block 0 over that of the top block, mean over the last --window steps
//   LN-in RMS  the RMS of each residual-stream LN's input (Post-LN: the sum x + f(x) entering it), mean
//              over the LNs and the last --window steps
//   LN gain    |dL/d in| / |dL/d out| through those LNs (the part of the input's gradient that came
//              through the LN), same means
//   |dW|/|W|   the first update that moved the weights (the first step with lr > 0): the mean over every
//              parameter tensor with |W| > 0 of |W_after - W_before| / |W_before| (Frobenius norms)
// A measure over seeds ignores the seeds where it is not finite (a run that blew up; 0/0 where no
// gradient reaches the blocks); "-" when none is.
//
//   build/bin/causes                     the default: post and pre, 12 rows, 5 seeds, 300 steps
//                                        (554 s wall on 2 busy cores, measured; 36000 steps as warmup's
//                                        33600, which take 184 s on 2 idle ones)
//   build/bin/causes --placements post --seeds 10 --steps 500
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>

#include "engine/engine.hpp"
#include "experiments/lib/harness.hpp"
#include "experiments/lib/report.hpp"
#include "analysis/step_measures.hpp"
#include "experiments/lib/training.hpp"
#include "nn/transformer_lm.hpp"

using namespace gs;
using namespace gs::experiments;
using namespace gs::analysis;

namespace {

struct CausesOptions {
  double lr = 1e-2;
  std::size_t steps = 300;
  std::size_t eval_batches = 20;
  double margin = 0.05;
  std::size_t window = 10;              // the last steps the end-of-run measures are averaged over
  std::vector<std::size_t> warmups = {5, 20, 100};
  std::size_t hold = 20;                // the hold row's N
  double beta2 = 0.999;                 // the beta2 row's beta2
};

// A row: its name and what it changes in the "none" run.
struct Variant {
  std::string name;
  std::size_t warmup = 0;
  OptimizerSetup optimizer;
};

std::vector<Variant> variants(const CausesOptions& o) {
  std::vector<Variant> v;
  v.push_back({"none", 0, {}});
  for (const std::string& name : nn::intervention_names()) {
    Variant x{name, 0, {}};
    x.optimizer.intervene = {name};
    v.push_back(x);
  }
  Variant beta2{"beta2 " + label(o.beta2), 0, {}};
  beta2.optimizer.beta2 = o.beta2;
  v.push_back(beta2);
  Variant radam{"radam", 0, {}};
  radam.optimizer.optimizer = "radam";
  v.push_back(radam);
  Variant hold{"hold " + std::to_string(o.hold), 0, {}};
  hold.optimizer.hold = o.hold;
  v.push_back(hold);
  for (std::size_t w : o.warmups) v.push_back({"warmup " + std::to_string(w), w, {}});
  return v;
}

// What one seed of one row measured. g0/gL, LN-in RMS and LN gain are means over the last --window
// steps; each is NaN for a run that did not finish.
struct CausesRun {
  std::vector<double> losses;  // the training loss of each step, ending at the first NaN/Inf
  double final_loss = NAN;     // held out, after the last step
  Verdict verdict = Verdict::diverged;
  double grad_ratio = NAN, ln_rms = NAN, ln_gain = NAN;
  double update_ratio = NAN;  // of the first update with lr > 0
};

Record to_record(const CausesRun& run) {
  return {{"losses", run.losses}, {"final_loss", {run.final_loss}}, {"verdict", {static_cast<double>(run.verdict)}},
          {"grad_ratio", {run.grad_ratio}}, {"ln_rms", {run.ln_rms}}, {"ln_gain", {run.ln_gain}},
          {"update_ratio", {run.update_ratio}}};
}

void from_record(const Record& r, CausesRun& run) {
  run = {r.list("losses"), r.get("final_loss"), static_cast<Verdict>(r.get("verdict")), r.get("grad_ratio"),
         r.get("ln_rms"), r.get("ln_gain"), r.get("update_ratio")};
}

// The mean over the parameter tensors with |W| > 0 of |after - before| / |before|.
double update_ratio(const std::vector<Array>& before, const std::vector<nn::NamedParameter>& after) {
  std::vector<double> ratios;
  for (std::size_t i = 0; i < before.size(); ++i) {
    const double w = norm(before[i]);
    const Array step = after[i].parameter.value() - before[i];
    if (w > 0) ratios.push_back(norm(step) / w);
  }
  return mean_of(ratios);
}

// One seed of one row.
CausesRun run_one(ModelOptions m, const Variant& variant, const Corpus& corpus, const CausesOptions& o, Tick& tick) {
  m.vocab = corpus.data.vocab();
  nn::TransformerLM model(m.config());
  const std::unique_ptr<nn::Optimizer> optimizer = variant.optimizer.make(model);
  const nn::Schedule schedule = variant.optimizer.with_hold({nn::ScheduleKind::warmup, o.lr, variant.warmup, o.steps, 0.1});
  Tape& tape = Tape::current();
  CausesRun run;
  std::vector<double> grad_ratio, ln_rms, ln_gain;
  std::size_t step = 0;
  for (; step < o.steps; ++step) {
    const bool measured = step + o.window >= o.steps;
    tape.keep_contributions = measured;  // for the norm gain (through_norm)
    const double loss = forward_backward(model, training_batch(corpus.data, m.batch, m.seq, m.seed, step));
    run.losses.push_back(loss);
    if (!std::isfinite(loss)) break;
    if (measured) {
      StepRecord s;
      read_tape(model, s);
      grad_ratio.push_back(s.layer_grad[1] / s.layer_grad[s.layer_grad.size() - 2]);
      ln_rms.push_back(mean_of(s.ln_rms));
      ln_gain.push_back(mean_of(s.ln_gain));
    }
    std::vector<Array> before;
    const bool first_move = std::isnan(run.update_ratio) && schedule.lr(step) > 0;
    if (first_move)
      for (const nn::NamedParameter& p : optimizer->parameters()) before.push_back(p.parameter.value());
    const Update u = apply_update(*optimizer, schedule, step, 0.0);
    if (first_move) run.update_ratio = update_ratio(before, optimizer->parameters());
    char what[96];
    std::snprintf(what, sizeof what, "loss %.4f lr %.2e |g| %.3f", loss, u.lr, u.grad_norm);
    tick(1, what);
  }
  tape.keep_contributions = false;
  if (step == o.steps) {
    run.final_loss = evaluate(model, corpus.data, m.batch, m.seq, o.eval_batches, m.seed);
    run.grad_ratio = mean_of(grad_ratio), run.ln_rms = mean_of(ln_rms), run.ln_gain = mean_of(ln_gain);
  }
  run.verdict = verdict_of(run.final_loss, Thresholds{corpus.uniform, corpus.unigram, o.margin});
  return run;
}

// ---- reporting ----

// The values of one field over the seeds of a row.
std::vector<double> over(const std::vector<const CausesRun*>& seeds, double CausesRun::*field) {
  std::vector<double> v;
  for (const CausesRun* r : seeds) v.push_back(r->*field);
  return v;
}

Table causes_table(const std::vector<CausesRun>& runs, const Grid& grid, const std::vector<Variant>& rows) {
  Table t({"placement", "change", "trained", "stuck", "diverged", "final loss", "g0/gL", "LN-in RMS", "LN gain", "|dW|/|W| 1st"});
  for (std::size_t p = 0; p < grid.labels(0).size(); ++p)
    for (std::size_t v = 0; v < rows.size(); ++v) {
      const std::vector<const CausesRun*> seeds = seeds_of(runs, grid, {p, v});
      std::size_t count[3] = {0, 0, 0};
      for (const CausesRun* r : seeds) ++count[static_cast<int>(r->verdict)];
      t.add_row({grid.labels(0)[p], rows[v].name, std::to_string(count[static_cast<int>(Verdict::trained)]),
                 std::to_string(count[static_cast<int>(Verdict::stuck)]),
                 std::to_string(count[static_cast<int>(Verdict::diverged)]),
                 finite_stat(over(seeds, &CausesRun::final_loss), 4), finite_stat(over(seeds, &CausesRun::grad_ratio)),
                 finite_stat(over(seeds, &CausesRun::ln_rms)), finite_stat(over(seeds, &CausesRun::ln_gain)),
                 finite_stat(over(seeds, &CausesRun::update_ratio))});
    }
  return t;
}

Table runs_table(const std::vector<CausesRun>& runs, const Grid& grid, const std::vector<Variant>& rows,
                 const std::vector<unsigned>& seeds) {
  Table t({"placement", "change", "seed", "final_loss", "verdict", "grad_ratio", "ln_rms", "ln_gain", "update_ratio"});
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const Cell c{&grid, i};
    const CausesRun& r = runs[i];
    t.add_row({grid.labels(0)[c["placement"]], rows[c["variant"]].name, std::to_string(seeds[c["seed"]]),
               fmt(r.final_loss, 6), to_string(r.verdict), fmt(r.grad_ratio, 6), fmt(r.ln_rms, 6), fmt(r.ln_gain, 6),
               fmt(r.update_ratio, 6)});
  }
  return t;
}

// One plot per placement: the training loss of every row, the mean over seeds in 10-step windows (a
// curve ends at the first window in which a seed's loss was NaN/Inf).
void draw_curves(const std::vector<CausesRun>& runs, const Grid& grid, std::size_t p, const std::vector<Variant>& rows,
                 const Corpus& corpus, std::size_t steps, const std::filesystem::path& dir) {
  const std::size_t window = std::min<std::size_t>(10, steps);
  const std::string& placement = grid.labels(0)[p];
  Plot plot{placement + ": training loss (mean over seeds and " + std::to_string(window) + "-step windows)", "step",
            "loss (nats)", false, false, {}};
  for (std::size_t v = 0; v < rows.size(); ++v) {
    std::vector<const std::vector<double>*> losses;
    for (const CausesRun* r : seeds_of(runs, grid, {p, v})) losses.push_back(&r->losses);
    plot.series.push_back(loss_curve(losses, steps, window, rows[v].name));
  }
  plot.series.push_back(flat_line("uniform log V", 0, static_cast<double>(steps), corpus.uniform));
  plot.series.push_back(flat_line("entropy-rate floor", 0, static_cast<double>(steps), corpus.floor));
  draw(plot, dir, "curves_" + file_part(placement));
}

void print_setup(const Experiment& ex, const CausesOptions& o, const Corpus& corpus, std::size_t rows) {
  const ModelOptions& mo = ex.model;
  std::printf("causes: %zu runs (%zu placements x %zu rows x %zu seeds), %zu steps each, lr %g\n",
              ex.placements.size() * rows * ex.seeds, ex.placements.size(), rows, ex.seeds, o.steps, o.lr);
  std::printf("  model: layers %zu, d_model %zu, heads %zu, batch %zu x seq %zu; %s (vocab %zu), uniform log V %.4f, "
              "unigram H1 %.4f, floor %.4f%s\n", mo.layers, mo.d_model, mo.heads, mo.batch, mo.seq, corpus.name.c_str(),
              corpus.data.vocab(), corpus.uniform, corpus.unigram, corpus.floor, mo.qk_norm == "none" ? "" : ("; qk-norm " + mo.qk_norm).c_str());
  std::printf("  every row: Adam(0.9, 0.98, eps 1e-8), constant lr, no clipping, unless the row changes it; "
              "verdicts: diverged if NaN/Inf or final > %.4f, stuck if final > %.4f, else trained\n",
              corpus.uniform + o.margin, corpus.unigram - o.margin);
  std::fflush(stdout);
}

void run(Experiment& ex, CausesOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const ModelOptions& mo = ex.model;
  keep_first_of_each(o.warmups);
  if (o.window > o.steps) throw FlagError("--window " + std::to_string(o.window) + " is more than --steps " + std::to_string(o.steps));
  const std::vector<Variant> rows = variants(o);
  std::vector<std::string> names;
  for (const Variant& v : rows) names.push_back(v.name);
  ex.check_memory(mo.config(), 2, true, ex.placements.size() * rows.size() * ex.seeds, corpus_bytes({}, mo.vocab));
  const Corpus corpus = build_corpus({}, mo.vocab, mo.seed, mo.seq);
  print_setup(ex, o, corpus, rows.size());
  Grid grid;
  grid.axis("placement", ex.placements).axis("variant", names).axis("seed", labels(ex.seed_list()));
  const auto runs = ex.run_cells<CausesRun>(grid, "steps", [&](const Cell&) { return o.steps; }, [&](const Cell& c, Tick& tick) {
    return run_one(ex.cell_model(c), rows[c["variant"]], corpus, o, tick);
  });
  if (!runs) return;
  const std::filesystem::path dir = ex.out;
  std::filesystem::create_directories(dir);
  const Table t = causes_table(*runs, grid, rows);
  std::printf("\nper row, over the seeds (g0/gL, LN-in RMS, LN gain: the last %zu steps; |dW|/|W|: the first update "
              "with lr > 0):\n\n%s", o.window, t.to_text().c_str());
  t.write_csv(dir / "causes.csv");
  runs_table(*runs, grid, rows, ex.seed_list()).write_csv(dir / "runs.csv");
  for (std::size_t p = 0; p < ex.placements.size(); ++p) draw_curves(*runs, grid, p, rows, corpus, o.steps, dir);
  std::printf("\nwrote %s: causes.csv, runs.csv, curves_<placement> (.png, .svg)\n", dir.string().c_str());
  std::printf("time: %.1f s\n", seconds_since(start));
}

}  // namespace

int main(int argc, char** argv) {
  Experiment ex("causes", "Why Post-LN gets stuck without warmup, by intervention: at lr 1e-2 on the Markov corpus "
                "(where warmup's grid finds Post-LN stuck and Pre-LN training), each row changes one thing -- a "
                "backward-pass intervention, Adam's beta2, RAdam, a hold, a warmup -- and trains every seed again; "
                "counts of trained/stuck/diverged, final held-out loss, block-0/top gradient ratio, LN-input RMS, "
                "LN gain and the first update's |dW|/|W|. Default: 2 placements x 12 rows x 5 seeds x 300 steps "
                "(36000 steps; --seeds 5 is the fewest the question needs, "
                "and 300 steps lets warmup 100 train).",
                "out/causes");
  ex.model = stability_model();
  ex.placements = {"post", "pre"};
  ex.seeds = 5;
  CausesOptions o;
  add_flag(ex.app, "--lr", o.lr, "the learning rate of every row (constant after any warmup)");
  add_flag(ex.app, "--steps", o.steps, "training steps per run");
  add_flag(ex.app, "--eval-batches", o.eval_batches, "held-out batches averaged for the final loss");
  add_flag(ex.app, "--margin", o.margin, "verdict margin in nats (as in warmup)");
  add_flag(ex.app, "--window", o.window, "the last steps over which g0/gL, LN-in RMS and LN gain are averaged");
  add_flag(ex.app, "--warmups", o.warmups, "the warmup rows' lengths W (comma-separated)");
  add_flag(ex.app, "--hold", o.hold, "the hold row's N: steps at lr 0 that update Adam's moments");
  add_flag(ex.app, "--adam-beta2", o.beta2, "the beta2 row's Adam beta2 (every other row: 0.98)");
  describe(ex.app, "--placements", "placements to train (comma-separated)");
  describe(ex.app, "--seeds", "seeds per row");
  return ex.main(argc, argv, [&] { run(ex, o); });
}
