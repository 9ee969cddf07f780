// lrsweep: final loss against learning rate, per recipe, and each recipe's learning-rate sensitivity
// (Wortsman et al. 2023): the mean over the sweep's lrs of min(final loss, loss at init) minus the best
// final loss (analysis/lr_sensitivity.hpp). A stable recipe trains well over a wide range of
// lrs and has a small sensitivity.
//
// A grid: variants x learning rates x seeds. A variant is a placement (a preset or P/N/R) with options
// joined by '+':
//   +qk       QK-norm: LayerNorm of each head's q and k over d_head (--qk-norm layer)
//   +qkrms    the same with RMSNorm (--qk-norm rms)
//   +z        the z-loss, C = --z-coef: loss = CE + C mean (log Z)^2 (the CE is what is reported)
//   +warmup   linear warmup over --warmup steps (otherwise none)
//   +gi       GI-Adam: Adam's second moment starts at g_0^2, no bias correction of v (--adam-v0 g0sq)
// e.g. pre, pre+qk, out+qk (OLMo 2's block), post+warmup, pre+gi. Every run: Adam(0.9, 0.98, eps 1e-8),
// the warmup (if any) and then a cosine decay to 0.1 lr over --steps steps, no clipping, on the Markov
// corpus of warmup and dynamics. Each run ends with its held-out loss (--eval-batches batches); its loss at
// initialization is measured on the same batches. Per step it records, of the training batch's forward
// pass: the largest |attention logit| over every block and head (max |q.k|/sqrt(dh)), the smallest
// attention entropy over the heads, the mean of log Z = logsumexp of the output logits over the
// positions, and the RMS of the output logits.
//
//   build/bin/lrsweep                                                the default sweep (about 4 CPU-minutes)
//   build/bin/lrsweep --variants pre,pre+qk --lrs 1e-3,1e-2,1e-1 --seeds 2 --steps 100
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "engine/engine.hpp"
#include "experiments/lib/harness.hpp"
#include "analysis/lr_sensitivity.hpp"
#include "experiments/lib/training_flags.hpp"
#include "experiments/lib/report.hpp"
#include "analysis/step_measures.hpp"
#include "experiments/lib/training.hpp"
#include "nn/optim.hpp"
#include "nn/transformer_lm.hpp"

using namespace gs;
using namespace gs::experiments;
using namespace gs::analysis;

namespace {

struct SweepOptions {
  std::vector<std::string> variants = {"pre", "pre+warmup", "pre+qk", "pre+z", "pre+gi", "post", "post+warmup", "post+gi", "out+qk"};
  std::vector<double> lrs = {1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1};
  std::size_t steps = 200;
  std::size_t warmup = 50;   // for +warmup
  double z_coef = 1e-4;      // for +z (Wortsman et al.'s 1e-4)
  std::size_t eval_batches = 10;
};

// A variant's parts: the placement and what its options set.
struct Variant {
  std::string placement;
  std::string qk_norm = "none";
  double z_loss = 0.0;
  bool warmup = false;
  bool gi = false;
};

// "out+qk+z" -> {out, qk layer, z}. Throws FlagError naming the variant and the valid options.
Variant parse_variant(const std::string& text, double z_coef, const ModelOptions& mo) {
  Variant v;
  std::vector<std::string> parts(1);
  for (char c : text) {
    if (c == '+') parts.emplace_back();
    else parts.back() += c;
  }
  const std::string valid = " (a variant is a placement with options joined by '+': qk, qkrms, z, warmup, gi)";
  try {
    v.placement = mo.with_axes(parts[0]);
  } catch (const std::exception& e) {
    throw FlagError("--variants " + text + ": " + e.what());
  }
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& o = parts[i];
    if (o == "qk") v.qk_norm = "layer";
    else if (o == "qkrms") v.qk_norm = "rms";
    else if (o == "z") v.z_loss = z_coef;
    else if (o == "warmup") v.warmup = true;
    else if (o == "gi") v.gi = true;
    else throw FlagError("--variants " + text + ": unknown option '" + o + "'" + valid);
  }
  return v;
}

// The largest and smallest of a list (NaN for an empty one).
double max_of(const std::vector<double>& v) { return v.empty() ? NAN : *std::max_element(v.begin(), v.end()); }
double min_of(const std::vector<double>& v) { return v.empty() ? NAN : *std::min_element(v.begin(), v.end()); }

// One run. The record: "init_loss", "final_loss" (NaN if a step's loss was NaN/Inf), "blew_up" (its
// 1-based step, 0: none), and per step "losses", "att_logit_max" (over blocks and heads),
// "att_entropy_min" (over blocks and heads), "log_z_mean", "logit_rms". With --html, the first seed's
// run is recorded for the explorer page.
Record run_one(ModelOptions m, const Variant& v, const Corpus& corpus, double lr, const SweepOptions& so,
               OptimizerSetup opt, Tick& tick, Experiment& ex, const Cell& cell) {
  m.vocab = corpus.data.vocab();
  m.placement = v.placement;
  if (v.qk_norm != "none") m.qk_norm = v.qk_norm;
  nn::TransformerLM model(m.config());
  if (v.gi) opt.adam_v0 = "g0sq";
  if (v.z_loss > 0) opt.z_loss = v.z_loss;
  const std::unique_ptr<nn::Optimizer> optimizer = opt.make(model);
  const std::size_t warmup = v.warmup ? so.warmup : 0;
  const nn::Schedule schedule = opt.with_hold({nn::ScheduleKind::cosine, lr, warmup, so.steps, 0.1});
  StepSetup setup{&corpus.data, m.batch, m.seq, m.seed, schedule, 0.0};
  const auto rec = cell["seed"] == 0 ? ex.recorder(cell.grid->describe(cell.index), model) : nullptr;
  setup.recorder = rec.get();
  Record r;
  r.set("init_loss", evaluate(model, corpus.data, m.batch, m.seq, so.eval_batches, m.seed));
  std::size_t blew_up = 0;
  for (std::size_t step = 0; step < so.steps && blew_up == 0; ++step) {
    const StepResult s = train_step(model, *optimizer, setup, step);
    r.push("losses", s.loss);
    if (!s.finite()) {
      blew_up = step + 1;
      break;
    }
    // The forward pass of this step is still on the tape (train_step resets it at the next step).
    r.push("att_logit_max", max_of(attention_logit_max(model)));
    r.push("att_entropy_min", min_of(attention_entropy(model)));
    const OutputLogits o = output_logits(model);
    r.push("log_z_mean", o.log_z_mean);
    r.push("logit_rms", o.rms);
    char what[96];
    std::snprintf(what, sizeof what, "loss %.4f lr %.2e", s.loss, s.lr);
    tick(1, what);
  }
  r.set("final_loss", blew_up ? NAN : evaluate(model, corpus.data, m.batch, m.seq, so.eval_batches, m.seed));
  r.set("blew_up", static_cast<double>(blew_up));
  if (rec) {
    rec->run().facts = {{"program", "lrsweep"}, {"run", cell.grid->describe(cell.index)}, {"data", corpus.name},
                        {"held-out loss", fmt(r.get("final_loss"))}};
    ex.add_run(cell.index, rec->take());
  }
  return r;
}

// ---- reporting ----

struct Sweep {
  const Results& results;
  const SweepOptions& so;
  std::vector<const Record*> at(const std::string& variant, double lr) const {
    return results.where({{"variant", variant}, {"lr", label(lr)}});
  }
};

// The last value of a per-step list, NaN for a run that blew up or an empty list.
double final_of(const Record& r, const std::string& name) {
  if (r.get("blew_up") != 0 || !r.has(name) || r.list(name).empty()) return NAN;
  return r.list(name).back();
}

// The sensitivity of one seed: the variant's runs of that seed over the lrs.
std::vector<double> sensitivities(const Sweep& s, const std::string& variant, std::size_t seeds) {
  std::vector<double> out;
  for (std::size_t k = 0; k < seeds; ++k) {
    std::vector<double> finals;
    double init = NAN;
    for (double lr : s.so.lrs) {
      const Record& r = *s.at(variant, lr).at(k);
      finals.push_back(r.get("final_loss"));
      init = r.get("init_loss");  // the same model at init for every lr of a seed
    }
    out.push_back(lr_sensitivity(finals, init));
  }
  return out;
}

std::string cell_of(const std::vector<const Record*>& runs, const std::string& name, bool final_step) {
  std::vector<double> v;
  std::size_t blown = 0;
  for (const Record* r : runs) {
    const double x = final_step ? final_of(*r, name) : r->get(name);
    if (std::isfinite(x)) v.push_back(x);
    else ++blown;
  }
  std::string cell = v.empty() ? "NaN" : fmt(stat_of(v), 3);
  if (blown && !v.empty()) cell += " (" + std::to_string(blown) + " NaN)";
  return cell;
}

// A table: a row per variant, a column per lr, each cell mean ± std over the seeds of `name`.
Table lr_table(const Sweep& s, const std::string& name, bool final_step) {
  std::vector<std::string> cols = {"variant"};
  for (double lr : s.so.lrs) cols.push_back("lr " + fmt(lr, 3));
  Table t(cols);
  for (const std::string& v : s.so.variants) {
    std::vector<std::string> row = {v};
    for (double lr : s.so.lrs) row.push_back(cell_of(s.at(v, lr), name, final_step));
    t.add_row(row);
  }
  return t;
}

// Mean over seeds of a per-step quantity's final value (or of a record's number), against lr.
Series lr_curve(const Sweep& s, const std::string& v, const std::string& name, bool final_step) {
  Series out{v, {}, {}, {}};
  for (double lr : s.so.lrs) {
    std::vector<double> vals;
    for (const Record* r : s.at(v, lr)) {
      const double x = final_step ? final_of(*r, name) : r->get(name);
      if (std::isfinite(x)) vals.push_back(x);
    }
    if (vals.size() != s.at(v, lr).size()) continue;  // a seed blew up: no point
    const Stat st = stat_of(vals);
    out.x.push_back(lr);
    out.y.push_back(st.mean);
    out.err.push_back(st.std);
  }
  return out;
}

void report(const Sweep& s, const Corpus& corpus, const std::vector<unsigned>& seeds, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const Table finals = lr_table(s, "final_loss", false);
  std::printf("\nfinal held-out loss (mean ± std over %zu seeds; NaN: the loss became NaN/Inf):\n\n%s", seeds.size(),
              finals.to_text().c_str());
  finals.write_csv(dir / "final_loss.csv");

  Table sens({"variant", "lr_sensitivity", "per_seed", "best_lr", "best_final_loss", "init_loss"});
  for (const std::string& v : s.so.variants) {
    const std::vector<double> per_seed = sensitivities(s, v, seeds.size());
    std::string list;
    for (double x : per_seed) list += (list.empty() ? "" : " ") + fmt(x, 3);
    double best = INFINITY, best_lr = NAN;
    for (double lr : s.so.lrs) {
      std::vector<double> f;
      for (const Record* r : s.at(v, lr)) f.push_back(r->get("final_loss"));
      const Stat st = stat_of(f);
      if (std::isfinite(st.mean) && st.mean < best) best = st.mean, best_lr = lr;
    }
    std::vector<double> inits;
    for (const Record* r : s.at(v, s.so.lrs.front())) inits.push_back(r->get("init_loss"));
    sens.add_row({v, fmt(stat_of(per_seed), 3), list, fmt(best_lr, 3), fmt(best, 4), fmt(stat_of(inits), 4)});
  }
  std::printf("\nLR sensitivity = mean over lrs of min(final, init loss) - best final loss, per seed, then mean ± std "
              "over seeds;\nbest lr by the seeds' mean final loss:\n\n%s", sens.to_text().c_str());
  sens.write_csv(dir / "sensitivity.csv");

  const Table logits = lr_table(s, "att_logit_max", true);
  std::printf("\nlargest |attention logit| over blocks and heads, at the last step:\n\n%s", logits.to_text().c_str());
  logits.write_csv(dir / "att_logit_max.csv");
  const Table entropy = lr_table(s, "att_entropy_min", true);
  std::printf("\nsmallest attention entropy over blocks and heads (nats), at the last step:\n\n%s",
              entropy.to_text().c_str());
  entropy.write_csv(dir / "att_entropy_min.csv");
  const Table logz = lr_table(s, "log_z_mean", true);
  std::printf("\nmean log Z of the output logits, at the last step:\n\n%s", logz.to_text().c_str());
  logz.write_csv(dir / "log_z_mean.csv");
  const Table rms = lr_table(s, "logit_rms", true);
  std::printf("\nRMS of the output logits, at the last step:\n\n%s", rms.to_text().c_str());
  rms.write_csv(dir / "logit_rms.csv");

  // runs.csv: one row per run; steps.csv: one row per run and step.
  Table runs({"variant", "lr", "seed", "init_loss", "final_loss", "nan_at_step", "att_logit_max_last",
              "att_logit_max_peak", "att_entropy_min_last", "log_z_mean_last", "logit_rms_last"});
  Table steps({"variant", "lr", "seed", "step", "loss", "att_logit_max", "att_entropy_min", "log_z_mean", "logit_rms"});
  const Grid& g = s.results.grid();
  for (std::size_t i = 0; i < g.size(); ++i) {
    const Cell c{&g, i};
    const Record& r = s.results.at(i);
    const std::string v = s.so.variants[c["variant"]], lr = fmt(s.so.lrs[c["lr"]], 3), seed = std::to_string(seeds[c["seed"]]);
    const std::vector<double> none;
    const std::vector<double>& peak = r.has("att_logit_max") ? r.list("att_logit_max") : none;
    runs.add_row({v, lr, seed, fmt(r.get("init_loss"), 6), fmt(r.get("final_loss"), 6),
                  std::to_string(static_cast<std::size_t>(r.get("blew_up"))), fmt(final_of(r, "att_logit_max"), 6),
                  fmt(max_of(peak), 6), fmt(final_of(r, "att_entropy_min"), 6), fmt(final_of(r, "log_z_mean"), 6),
                  fmt(final_of(r, "logit_rms"), 6)});
    for (std::size_t k = 0; k < peak.size(); ++k)
      steps.add_row({v, lr, seed, std::to_string(k + 1), fmt(r.list("losses")[k], 7), fmt(peak[k], 7),
                     fmt(r.list("att_entropy_min")[k], 7), fmt(r.list("log_z_mean")[k], 7),
                     fmt(r.list("logit_rms")[k], 7)});
  }
  runs.write_csv(dir / "runs.csv");
  steps.write_csv(dir / "steps.csv");

  auto plot_vs_lr = [&](const std::string& name, bool final_step, const std::string& title, const std::string& ylabel,
                        bool log_y, const std::string& file) {
    Plot p{title, "learning rate", ylabel, true, log_y, {}};
    for (const std::string& v : s.so.variants) p.series.push_back(lr_curve(s, v, name, final_step));
    if (name == "final_loss") {
      const double x0 = s.so.lrs.front(), x1 = s.so.lrs.back();
      p.series.push_back({"uniform log V", {x0, x1}, {corpus.uniform, corpus.uniform}, {}});
      p.series.push_back({"entropy-rate floor", {x0, x1}, {corpus.floor, corpus.floor}, {}});
    }
    draw(p, dir, file);
  };
  plot_vs_lr("final_loss", false, "final held-out loss against lr (mean ± std over seeds; missing: a seed's NaN)",
             "loss (nats)", false, "final_loss");
  plot_vs_lr("att_logit_max", true, "largest |attention logit| at the last step", "max |q.k|/sqrt(dh) (log scale)",
             true, "att_logit_max");
  plot_vs_lr("att_entropy_min", true, "smallest attention entropy at the last step", "entropy (nats)", false,
             "att_entropy_min");
  plot_vs_lr("log_z_mean", true, "mean log Z of the output logits at the last step", "log Z", false, "log_z_mean");
  std::printf("\nwrote %s: final_loss.csv, sensitivity.csv, att_logit_max.csv, att_entropy_min.csv, log_z_mean.csv, "
              "logit_rms.csv, runs.csv, steps.csv; plots final_loss, att_logit_max, att_entropy_min, log_z_mean "
              "(.png, .svg)\n",
              dir.string().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Experiment ex("lrsweep", "Final loss against learning rate per recipe (a placement with qk-norm, z-loss, warmup or "
                "GI-Adam), and each recipe's LR sensitivity (Wortsman et al. 2023): the mean over the lrs of "
                "min(final loss, loss at init) minus the best final loss. Also, per run, the largest attention logit, "
                "the smallest attention entropy, log Z and the RMS of the output logits.",
                "out/lrsweep");
  ex.model = stability_model();
  ex.model.layers = 4;
  ex.seeds = 3;
  SweepOptions so;
  OptimizerSetup opt;
  add_flag(ex.app, "--variants", so.variants, "recipes: a placement with options joined by '+': qk (qk-norm layer), "
           "qkrms, z (z-loss --z-coef), warmup (--warmup steps), gi (GI-Adam), e.g. out+qk");
  add_flag(ex.app, "--lrs", so.lrs, "peak learning rates (comma-separated)");
  add_flag(ex.app, "--steps", so.steps, "training steps per run (warmup, then a cosine decay to 0.1 lr)");
  add_flag(ex.app, "--warmup", so.warmup, "linear-warmup steps of the +warmup variants");
  add_flag(ex.app, "--z-coef", so.z_coef, "C of the +z variants' z-loss");
  add_flag(ex.app, "--eval-batches", so.eval_batches, "held-out batches averaged for the losses at init and at the end");
  add_optimizer_flags(ex.app, opt, false);
  describe(ex.app, "--seeds", "seeds per (variant, lr): the sensitivity is computed per seed, then mean ± std");
  describe(ex.app, "--vocab", "vocabulary of the Markov corpus");
  return ex.main(argc, argv, [&] {
    const auto start = std::chrono::steady_clock::now();
    const ModelOptions& mo = ex.model;
    keep_first_of_each(so.variants);
    keep_first_of_each(so.lrs);
    std::sort(so.lrs.begin(), so.lrs.end());
    std::vector<Variant> variants;
    for (const std::string& v : so.variants) variants.push_back(parse_variant(v, so.z_coef, mo));
    if (opt.z_loss != 0 || opt.adam_v0 != "zero")
      throw FlagError("lrsweep sets the z-loss and Adam's v0 per variant (+z, +gi): leave --z-loss and --adam-v0 out");
    if (so.warmup > so.steps)
      throw FlagError("--warmup " + std::to_string(so.warmup) + " is more than --steps " + std::to_string(so.steps));
    const std::size_t runs = variants.size() * so.lrs.size() * ex.seeds;
    ex.check_memory(mo.config(), 2, ex.html_wanted(), runs, corpus_bytes({}, mo.vocab));
    const Corpus corpus = build_corpus({}, mo.vocab, mo.seed, mo.seq);
    std::printf("lrsweep: %zu runs (%zu variants x %zu lrs x %zu seeds), %zu steps each\n", runs, variants.size(),
                so.lrs.size(), ex.seeds, so.steps);
    std::printf("  model: layers %zu, d_model %zu, heads %zu, d_ff %zu, init %s; batch %zu x seq %zu%s\n", mo.layers,
                mo.d_model, mo.heads, mo.config().ff(), mo.init.c_str(), mo.batch, mo.seq, mo.qk_norm == "none" ? "" : ("; qk-norm " + mo.qk_norm + " where a variant sets none").c_str());
    std::printf("  %s, cosine decay to 0.1 lr (+warmup: linear over %zu steps first), no clipping; +z: C = %g\n",
                opt.text().c_str(), so.warmup, so.z_coef);
    std::printf("  Markov corpus: uniform log V = %.4f, entropy-rate floor %.4f; %u parallel jobs\n", corpus.uniform,
                corpus.floor, ex.jobs);
    std::fflush(stdout);
    Grid grid;
    grid.axis("variant", so.variants).axis("lr", labels(so.lrs)).axis("seed", labels(ex.seed_list()));
    const auto results = ex.run_cells(grid, "steps", [&](const Cell&) { return so.steps; }, [&](const Cell& c, Tick& tick) {
      ModelOptions m = mo;
      m.seed = ex.seed_list()[c["seed"]];
      return run_one(m, variants[c["variant"]], corpus, so.lrs[c["lr"]], so, opt, tick, ex, c);
    });
    if (!results) return;
    report(Sweep{*results, so}, corpus, ex.seed_list(), ex.out);
    std::printf("time: %.1f s\n", seconds_since(start));
  });
}
