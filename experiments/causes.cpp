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

double mean_of(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x;
  return v.empty() ? NAN : s / static_cast<double>(v.size());
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

// One seed of one row: "losses" (the training loss of each step, ending at the first NaN/Inf),
// "final_loss", "verdict", "grad_ratio", "ln_rms", "ln_gain", "update_ratio".
Record run_one(ModelOptions m, const Variant& variant, const Corpus& corpus, const CausesOptions& o, Tick& tick) {
  m.vocab = corpus.data.vocab();
  nn::TransformerLM model(m.config());
  const std::unique_ptr<nn::Optimizer> optimizer = variant.optimizer.make(model);
  const nn::Schedule schedule = variant.optimizer.with_hold({nn::ScheduleKind::warmup, o.lr, variant.warmup, o.steps, 0.1});
  Tape& tape = Tape::current();
  Record r;
  std::vector<double> grad_ratio, ln_rms, ln_gain;
  double first_update = NAN;
  std::size_t step = 0;
  for (; step < o.steps; ++step) {
    const bool measured = step + o.window >= o.steps;
    tape.keep_contributions = measured;  // for the norm gain (through_norm)
    const double loss = forward_backward(model, training_batch(corpus.data, m.batch, m.seq, m.seed, step));
    r.push("losses", loss);
    if (!std::isfinite(loss)) break;
    if (measured) {
      StepRecord s;
      read_tape(model, s);
      grad_ratio.push_back(s.layer_grad[1] / s.layer_grad[s.layer_grad.size() - 2]);
      ln_rms.push_back(mean_of(s.ln_rms));
      ln_gain.push_back(mean_of(s.ln_gain));
    }
    std::vector<Array> before;
    const bool first_move = std::isnan(first_update) && schedule.lr(step) > 0;
    if (first_move)
      for (const nn::NamedParameter& p : optimizer->parameters()) before.push_back(p.parameter.value());
    const Update u = apply_update(*optimizer, schedule, step, 0.0);
    if (first_move) first_update = update_ratio(before, optimizer->parameters());
    char what[96];
    std::snprintf(what, sizeof what, "loss %.4f lr %.2e |g| %.3f", loss, u.lr, u.grad_norm);
    tick(1, what);
  }
  tape.keep_contributions = false;
  const bool finished = step == o.steps;
  const double final_loss = finished ? evaluate(model, corpus.data, m.batch, m.seq, o.eval_batches, m.seed) : NAN;
  r.set("final_loss", final_loss);
  r.set("verdict", static_cast<double>(verdict_of(final_loss, Thresholds{corpus.uniform, corpus.unigram, o.margin})));
  r.set("grad_ratio", finished ? mean_of(grad_ratio) : NAN);
  r.set("ln_rms", finished ? mean_of(ln_rms) : NAN);
  r.set("ln_gain", finished ? mean_of(ln_gain) : NAN);
  r.set("update_ratio", first_update);
  return r;
}

// ---- reporting ----

// fmt(mean ± sd) of the finite values, "-" if there are none.
std::string finite_stat(const std::vector<const Record*>& runs, const std::string& quantity, int digits = 3) {
  std::vector<double> v;
  for (const Record* r : runs)
    if (std::isfinite(r->get(quantity))) v.push_back(r->get(quantity));
  return v.empty() ? "-" : fmt(stat_of(v), digits);
}

Verdict verdict(const Record& r) { return static_cast<Verdict>(static_cast<int>(r.get("verdict"))); }

Table causes_table(const Results& results, const std::vector<std::string>& placements, const std::vector<Variant>& rows) {
  Table t({"placement", "change", "trained", "stuck", "diverged", "final loss", "g0/gL", "LN-in RMS", "LN gain", "|dW|/|W| 1st"});
  for (const std::string& p : placements)
    for (const Variant& v : rows) {
      const auto runs = results.where({{"placement", p}, {"variant", v.name}});
      std::size_t count[3] = {0, 0, 0};
      for (const Record* r : runs) ++count[static_cast<int>(verdict(*r))];
      t.add_row({p, v.name, std::to_string(count[static_cast<int>(Verdict::trained)]),
                 std::to_string(count[static_cast<int>(Verdict::stuck)]),
                 std::to_string(count[static_cast<int>(Verdict::diverged)]), finite_stat(runs, "final_loss", 4),
                 finite_stat(runs, "grad_ratio"), finite_stat(runs, "ln_rms"), finite_stat(runs, "ln_gain"),
                 finite_stat(runs, "update_ratio")});
    }
  return t;
}

Table runs_table(const Results& results, const std::vector<std::string>& placements, const std::vector<Variant>& rows,
                 const std::vector<unsigned>& seeds) {
  Table t({"placement", "change", "seed", "final_loss", "verdict", "grad_ratio", "ln_rms", "ln_gain", "update_ratio"});
  for (std::size_t i = 0; i < results.grid().size(); ++i) {
    const Cell c{&results.grid(), i};
    const Record& r = results.at(i);
    t.add_row({placements[c["placement"]], rows[c["variant"]].name, std::to_string(seeds[c["seed"]]),
               fmt(r.get("final_loss"), 6), to_string(verdict(r)), fmt(r.get("grad_ratio"), 6), fmt(r.get("ln_rms"), 6),
               fmt(r.get("ln_gain"), 6), fmt(r.get("update_ratio"), 6)});
  }
  return t;
}

// One plot per placement: the training loss of every row, the mean over seeds in 10-step windows (a
// curve ends at the first window in which a seed's loss was NaN/Inf).
void draw_curves(const Results& results, const std::string& placement, const std::vector<Variant>& rows,
                 const Corpus& corpus, std::size_t steps, const std::filesystem::path& dir) {
  const std::size_t window = std::min<std::size_t>(10, steps);
  Plot plot{placement + ": training loss (mean over seeds and " + std::to_string(window) + "-step windows)", "step",
            "loss (nats)", false, false, {}};
  for (const Variant& v : rows) {
    const auto runs = results.where({{"placement", placement}, {"variant", v.name}});
    Series s{v.name, {}, {}, {}};
    for (std::size_t start = 0; start + window <= steps; start += window) {
      double sum = 0.0;
      for (const Record* r : runs)
        for (std::size_t k = start; k < start + window; ++k) sum += k < r->list("losses").size() ? r->list("losses")[k] : NAN;
      const double mean = sum / static_cast<double>(window * runs.size());
      if (!std::isfinite(mean)) break;
      s.x.push_back(static_cast<double>(start + window));
      s.y.push_back(mean);
    }
    plot.series.push_back(s);
  }
  plot.series.push_back({"uniform log V", {0, static_cast<double>(steps)}, {corpus.uniform, corpus.uniform}, {}});
  plot.series.push_back({"entropy-rate floor", {0, static_cast<double>(steps)}, {corpus.floor, corpus.floor}, {}});
  draw(plot, dir, "curves_" + file_part(placement));
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
  return ex.main(argc, argv, [&] {
    const auto start = std::chrono::steady_clock::now();
    const ModelOptions& mo = ex.model;
    keep_first_of_each(o.warmups);
    if (o.window > o.steps) throw FlagError("--window " + std::to_string(o.window) + " is more than --steps " + std::to_string(o.steps));
    const std::vector<Variant> rows = variants(o);
    std::vector<std::string> names;
    for (const Variant& v : rows) names.push_back(v.name);
    const std::size_t runs = ex.placements.size() * rows.size() * ex.seeds;
    ex.check_memory(mo.config(), 2, true, runs, corpus_bytes({}, mo.vocab));
    const Corpus corpus = build_corpus({}, mo.vocab, mo.seed, mo.seq);
    std::printf("causes: %zu runs (%zu placements x %zu rows x %zu seeds), %zu steps each, lr %g\n", runs,
                ex.placements.size(), rows.size(), ex.seeds, o.steps, o.lr);
    std::printf("  model: layers %zu, d_model %zu, heads %zu, batch %zu x seq %zu; %s (vocab %zu), uniform log V %.4f, "
                "unigram H1 %.4f, floor %.4f%s\n", mo.layers, mo.d_model, mo.heads, mo.batch, mo.seq, corpus.name.c_str(),
                corpus.data.vocab(), corpus.uniform, corpus.unigram, corpus.floor, mo.qk_norm == "none" ? "" : ("; qk-norm " + mo.qk_norm).c_str());
    std::printf("  every row: Adam(0.9, 0.98, eps 1e-8), constant lr, no clipping, unless the row changes it; "
                "verdicts: diverged if NaN/Inf or final > %.4f, stuck if final > %.4f, else trained\n",
                corpus.uniform + o.margin, corpus.unigram - o.margin);
    std::fflush(stdout);
    Grid grid;
    grid.axis("placement", ex.placements).axis("variant", names).axis("seed", labels(ex.seed_list()));
    const auto results = ex.run_cells(grid, "steps", [&](const Cell&) { return o.steps; }, [&](const Cell& c, Tick& tick) {
      ModelOptions m = mo;
      m.placement = ex.placements[c["placement"]];
      m.seed = ex.seed_list()[c["seed"]];
      return run_one(m, rows[c["variant"]], corpus, o, tick);
    });
    if (!results) return;
    const std::filesystem::path dir = ex.out;
    std::filesystem::create_directories(dir);
    const Table t = causes_table(*results, ex.placements, rows);
    std::printf("\nper row, over the seeds (g0/gL, LN-in RMS, LN gain: the last %zu steps; |dW|/|W|: the first update "
                "with lr > 0):\n\n%s", o.window, t.to_text().c_str());
    t.write_csv(dir / "causes.csv");
    runs_table(*results, ex.placements, rows, ex.seed_list()).write_csv(dir / "runs.csv");
    for (const std::string& p : ex.placements) draw_curves(*results, p, rows, corpus, o.steps, dir);
    std::printf("\nwrote %s: causes.csv, runs.csv, curves_<placement> (.png, .svg)\n", dir.string().c_str());
    std::printf("time: %.1f s\n", seconds_since(start));
  });
}
