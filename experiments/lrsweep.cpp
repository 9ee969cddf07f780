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

#include "experiments/lib/experiment.hpp"
#include "analysis/lr_sensitivity.hpp"
#include "analysis/step_measures.hpp"

namespace {

struct SweepOptions : TrainingOptions {  // --steps and --eval-batches
  SweepOptions() { steps = 200, eval_batches = 10; }
  std::vector<std::string> variants = {"pre", "pre+warmup", "pre+qk", "pre+z", "pre+gi", "post", "post+warmup", "post+gi", "out+qk"};
  std::vector<double> lrs = {1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1};
  std::size_t warmup = 50;   // for +warmup
  double z_coef = 1e-4;      // for +z (Wortsman et al.'s 1e-4)
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
    if (std::find(parts.begin() + 1, parts.begin() + static_cast<std::ptrdiff_t>(i), o) != parts.begin() + static_cast<std::ptrdiff_t>(i))
      throw FlagError("--variants " + text + ": option '" + o + "' given twice");
    if ((o == "qk" || o == "qkrms") && v.qk_norm != "none")
      throw FlagError("--variants " + text + ": qk and qkrms both set the qk-norm; give one of them");
    if (o == "qk") v.qk_norm = "layer";
    else if (o == "qkrms") v.qk_norm = "rms";
    else if (o == "z") v.z_loss = z_coef;
    else if (o == "warmup") v.warmup = true;
    else if (o == "gi") v.gi = true;
    else throw FlagError("--variants " + text + ": unknown option '" + o + "'" + valid);
  }
  return v;
}

// "" if every flag given acts in this sweep, else the first that does not, and why. A default is
// checked only where a variant uses it (--warmup against --steps only with a +warmup variant).
std::string sweep_flag_problem(const CLI::App& app, const SweepOptions& so, const ModelOptions& mo) {
  auto given = [&](const char* flag) { return app.count(flag) > 0; };
  bool z = false, warmup = false;
  try {
    for (const std::string& text : so.variants) {
      const Variant v = parse_variant(text, so.z_coef, mo);
      z = z || v.z_loss > 0;
      warmup = warmup || v.warmup;
    }
  } catch (const FlagError& e) {
    return e.what();
  }
  std::string list;
  for (const std::string& v : so.variants) list += (list.empty() ? "" : ",") + v;
  if (given("--z-loss") || given("--adam-v0"))
    return std::string(given("--z-loss") ? "--z-loss" : "--adam-v0") +
           ": lrsweep sets the z-loss and Adam's v0 per variant (+z, +gi): leave --z-loss and --adam-v0 out";
  if (given("--z-coef") && !z)
    return "--z-coef " + fmt(so.z_coef) + " sets the +z variants' z-loss, and --variants " + list + " has none (e.g. pre+z)";
  if (given("--warmup") && !warmup)
    return "--warmup " + std::to_string(so.warmup) + " sets the +warmup variants' warmup, and --variants " + list +
           " has none (e.g. post+warmup)";
  if (warmup && so.warmup > so.steps) return so.at_most_steps("--warmup", so.warmup);
  if (given("--placements"))
    return "--placements: lrsweep's placements are those of --variants (e.g. --variants pre,post+warmup)";
  if (given("--placement") && !given("--dump"))
    return "--placement sets only the model --dump writes; lrsweep's placements are those of --variants";
  return "";
}

// The largest and smallest of a list (NaN for an empty one).
double max_of(const std::vector<double>& v) { return v.empty() ? NAN : *std::max_element(v.begin(), v.end()); }
double min_of(const std::vector<double>& v) { return v.empty() ? NAN : *std::min_element(v.begin(), v.end()); }

// What one run measured: its losses at init and at the end, and per step the training loss and, of the
// step's forward pass, the largest |attention logit| and smallest attention entropy over blocks and heads,
// the mean log Z and the RMS of the output logits.
struct SweepRun {
  double init_loss = NAN, final_loss = NAN;  // held out; final NaN if a step's loss was NaN/Inf
  std::size_t blew_up = 0;                   // the 1-based step whose loss was NaN/Inf, 0: none
  std::vector<double> losses, att_logit_max, att_entropy_min, log_z_mean, logit_rms;
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SweepRun, init_loss, final_loss, blew_up, losses, att_logit_max, att_entropy_min,
                                   log_z_mean, logit_rms)

// One run. With --html, the first seed's run is recorded for the explorer page.
SweepRun run_one(ModelOptions m, const Variant& v, const nn::Corpus& corpus, double lr, const SweepOptions& so,
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
  const auto rec = cell["seed"] == 0 ? ex.recorder(cell.grid->describe(cell.index), model) : nullptr;
  const nn::StepSetup setup{&corpus.data, m.batch, m.seq, m.seed, schedule, 0.0, step_hooks(model, rec.get())};
  SweepRun run;
  run.init_loss = nn::evaluate(model, corpus.data, m.batch, m.seq, so.eval_batches, m.seed);
  for (std::size_t step = 0; step < so.steps; ++step) {
    const nn::StepResult s = nn::train_step(model, *optimizer, setup, step);
    run.losses.push_back(s.loss);
    if (!s.finite()) {
      refuse_first_step(s, step, v.z_loss > 0 ? "+z's --z-coef " + fmt(v.z_loss) : "");
      run.blew_up = step + 1;
      break;
    }
    // The forward pass of this step is still on the tape (train_step resets it at the next step).
    run.att_logit_max.push_back(max_of(attention_logit_max(model)));
    run.att_entropy_min.push_back(min_of(attention_entropy(model)));
    const OutputLogits o = output_logits(model);
    run.log_z_mean.push_back(o.log_z_mean);
    run.logit_rms.push_back(o.rms);
    char what[96];
    std::snprintf(what, sizeof what, "loss %.4f lr %.2e", s.loss, s.lr);
    tick(1, what);
  }
  run.final_loss = run.blew_up ? NAN : nn::evaluate(model, corpus.data, m.batch, m.seq, so.eval_batches, m.seed);
  if (rec) {
    rec->run().facts = {{"program", "lrsweep"}, {"run", cell.grid->describe(cell.index)}, {"data", corpus.name},
                        {"held-out loss", fmt(run.final_loss)}};
    ex.add_run(cell.index, rec->take());
  }
  return run;
}

// ---- reporting ----

// A per-step list of SweepRun; null: the final held-out loss instead.
using StepList = std::vector<double> SweepRun::*;

// The final held-out loss, or the last value of a per-step list (NaN for a run that blew up).
double value_of(const SweepRun& r, StepList list) {
  if (list == nullptr) return r.final_loss;
  return r.blew_up != 0 || (r.*list).empty() ? NAN : (r.*list).back();
}

// What report() prints, writes and draws of each quantity: a table NAME.csv, and the plot NAME if it has a title.
struct Quantity {
  StepList list;
  std::string name, heading, plot_title, ylabel;
  bool log_y = false;
};

std::vector<Quantity> quantities() {
  return {{&SweepRun::att_logit_max, "att_logit_max", "largest |attention logit| over blocks and heads, at the last step",
           "largest |attention logit| at the last step", "max |q.k|/sqrt(dh) (log scale)", true},
          {&SweepRun::att_entropy_min, "att_entropy_min",
           "smallest attention entropy over blocks and heads (nats), at the last step",
           "smallest attention entropy at the last step", "entropy (nats)", false},
          {&SweepRun::log_z_mean, "log_z_mean", "mean log Z of the output logits, at the last step",
           "mean log Z of the output logits at the last step", "log Z", false},
          {&SweepRun::logit_rms, "logit_rms", "RMS of the output logits, at the last step", "", "", false}};
}

// Every run, and the grid of its cells: axes variant, lr, seed.
struct Sweep : GridRuns<SweepRun> {
  const SweepOptions& so;
  std::vector<const SweepRun*> at(std::size_t v, std::size_t l) const { return seeds({v, l}); }
};

// The sensitivity of each seed: the variant's runs of that seed over the lrs.
std::vector<double> sensitivities(const Sweep& s, std::size_t v, std::size_t seeds) {
  std::vector<double> out;
  for (std::size_t k = 0; k < seeds; ++k) {
    std::vector<double> finals;
    for (std::size_t l = 0; l < s.so.lrs.size(); ++l) finals.push_back(s.at(v, l).at(k)->final_loss);
    out.push_back(lr_sensitivity(finals, s.at(v, 0).at(k)->init_loss));  // the same model at init for every lr
  }
  return out;
}

std::string cell_of(const std::vector<const SweepRun*>& runs, StepList list) {
  std::vector<double> v;
  std::size_t blown = 0;
  for (const SweepRun* r : runs) {
    const double x = value_of(*r, list);
    if (std::isfinite(x)) v.push_back(x);
    else ++blown;
  }
  std::string cell = v.empty() ? "NaN" : fmt(stat_of(v), 3);
  if (blown && !v.empty()) cell += " (" + std::to_string(blown) + " NaN)";
  return cell;
}

// A row per variant, a column per lr, each cell mean ± std over the seeds; printed under `heading` and
// written as DIR/NAME.csv.
void lr_table(const Sweep& s, StepList list, const std::string& heading, const std::filesystem::path& dir,
              const std::string& name) {
  std::vector<std::string> cols = {"variant"};
  for (double lr : s.so.lrs) cols.push_back("lr " + fmt(lr, 3));
  Table t(cols);
  for (std::size_t v = 0; v < s.so.variants.size(); ++v) {
    std::vector<std::string> row = {s.so.variants[v]};
    for (std::size_t l = 0; l < s.so.lrs.size(); ++l) row.push_back(cell_of(s.at(v, l), list));
    t.add_row(row);
  }
  std::printf("\n%s:\n\n%s", heading.c_str(), t.to_text().c_str());
  t.write_csv(dir / (name + ".csv"));
}

// Mean over seeds against lr, a line per variant; no point where a seed blew up.
void plot_vs_lr(const Sweep& s, StepList list, const std::string& title, const std::string& ylabel, bool log_y,
                const std::filesystem::path& dir, const std::string& name, std::vector<Series> extra = {}) {
  Plot p{title, "learning rate", ylabel, true, log_y, {}};
  for (std::size_t v = 0; v < s.so.variants.size(); ++v) {
    Series line{s.so.variants[v], {}, {}, {}};
    for (std::size_t l = 0; l < s.so.lrs.size(); ++l) {
      std::vector<double> vals;
      for (const SweepRun* r : s.at(v, l))
        if (std::isfinite(value_of(*r, list))) vals.push_back(value_of(*r, list));
      if (vals.size() != s.at(v, l).size()) continue;
      const Stat st = stat_of(vals);
      line.x.push_back(s.so.lrs[l]);
      line.y.push_back(st.mean);
      line.err.push_back(st.std);
    }
    p.series.push_back(line);
  }
  for (Series& e : extra) p.series.push_back(std::move(e));
  draw(p, dir, name);
}

Table sensitivity_table(const Sweep& s, std::size_t seeds) {
  Table sens({"variant", "lr_sensitivity", "per_seed", "best_lr", "best_final_loss", "init_loss"});
  for (std::size_t v = 0; v < s.so.variants.size(); ++v) {
    const std::vector<double> per_seed = sensitivities(s, v, seeds);
    std::string list;
    for (double x : per_seed) list += (list.empty() ? "" : " ") + (std::isfinite(x) ? fmt(x, 3) : "-");
    double best = INFINITY, best_lr = NAN;
    for (std::size_t l = 0; l < s.so.lrs.size(); ++l) {
      std::vector<double> f;
      for (const SweepRun* r : s.at(v, l)) f.push_back(r->final_loss);
      const Stat st = stat_of(f);
      if (std::isfinite(st.mean) && st.mean < best) best = st.mean, best_lr = s.so.lrs[l];
    }
    std::vector<double> inits;
    for (const SweepRun* r : s.at(v, 0)) inits.push_back(r->init_loss);
    if (!std::isfinite(best)) {  // every lr blew up: no best lr, and the sensitivity is not defined
      sens.add_row({s.so.variants[v], "-", list, "none: every lr blew up", "-", fmt(stat_of(inits), 4)});
      continue;
    }
    sens.add_row({s.so.variants[v], fmt(stat_of(per_seed), 3), list, fmt(best_lr, 3), fmt(best, 4), fmt(stat_of(inits), 4)});
  }
  return sens;
}

// runs.csv: one row per run; steps.csv: one row per run and step.
void write_runs_csv(const Sweep& s, const std::vector<unsigned>& seeds, const std::filesystem::path& dir) {
  Table runs({"variant", "lr", "seed", "init_loss", "final_loss", "nan_at_step", "att_logit_max_last",
              "att_logit_max_peak", "att_entropy_min_last", "log_z_mean_last", "logit_rms_last"});
  Table steps({"variant", "lr", "seed", "step", "loss", "att_logit_max", "att_entropy_min", "log_z_mean", "logit_rms"});
  for (std::size_t i = 0; i < s.grid.size(); ++i) {
    const Cell c{&s.grid, i};
    const SweepRun& r = s.runs[i];
    const std::string v = s.so.variants[c["variant"]], lr = fmt(s.so.lrs[c["lr"]], 3), seed = std::to_string(seeds[c["seed"]]);
    runs.add_row({v, lr, seed, fmt(r.init_loss, 6), fmt(r.final_loss, 6), std::to_string(r.blew_up),
                  fmt(value_of(r, &SweepRun::att_logit_max), 6), fmt(max_of(r.att_logit_max), 6),
                  fmt(value_of(r, &SweepRun::att_entropy_min), 6), fmt(value_of(r, &SweepRun::log_z_mean), 6),
                  fmt(value_of(r, &SweepRun::logit_rms), 6)});
    for (std::size_t k = 0; k < r.att_logit_max.size(); ++k)
      steps.add_row({v, lr, seed, std::to_string(k + 1), fmt(r.losses[k], 7), fmt(r.att_logit_max[k], 7),
                     fmt(r.att_entropy_min[k], 7), fmt(r.log_z_mean[k], 7), fmt(r.logit_rms[k], 7)});
  }
  runs.write_csv(dir / "runs.csv");
  steps.write_csv(dir / "steps.csv");
}

void report(const Sweep& s, const nn::Corpus& corpus, const std::vector<unsigned>& seeds, const std::filesystem::path& dir) {
  lr_table(s, nullptr, "final held-out loss (mean ± std over " + std::to_string(seeds.size()) +
                           " seeds; NaN: the loss became NaN/Inf)", dir, "final_loss");
  const Table sens = sensitivity_table(s, seeds.size());
  std::printf("\nLR sensitivity = mean over lrs of min(final, init loss) - best final loss, per seed, then mean ± std "
              "over seeds;\nbest lr by the seeds' mean final loss:\n\n%s", sens.to_text().c_str());
  sens.write_csv(dir / "sensitivity.csv");
  for (const Quantity& q : quantities()) lr_table(s, q.list, q.heading, dir, q.name);
  write_runs_csv(s, seeds, dir);
  const double x0 = s.so.lrs.front(), x1 = s.so.lrs.back();
  plot_vs_lr(s, nullptr, "final held-out loss against lr (mean ± std over seeds; missing: a seed's NaN)", "loss (nats)",
             false, dir, "final_loss",
             {flat_line("uniform log V", x0, x1, corpus.uniform), flat_line("entropy-rate floor", x0, x1, corpus.floor)});
  for (const Quantity& q : quantities())
    if (!q.plot_title.empty()) plot_vs_lr(s, q.list, q.plot_title, q.ylabel, q.log_y, dir, q.name);
  std::printf("\nwrote %s: final_loss.csv, sensitivity.csv, att_logit_max.csv, att_entropy_min.csv, log_z_mean.csv, "
              "logit_rms.csv, runs.csv, steps.csv; plots final_loss, att_logit_max, att_entropy_min, log_z_mean "
              "(.png, .svg)\n",
              dir.string().c_str());
}

void run(Experiment& ex, SweepOptions& so, const OptimizerSetup& opt) {
  const ModelOptions& mo = ex.model;
  keep_first_of_each(so.variants);
  keep_first_of_each(so.lrs);
  std::sort(so.lrs.begin(), so.lrs.end());
  std::vector<Variant> variants;
  for (const std::string& v : so.variants) variants.push_back(parse_variant(v, so.z_coef, mo));
  const std::size_t cells = variants.size() * so.lrs.size() * ex.seeds;
  ex.check_memory(mo.config(), 2, ex.html_wanted(), cells, nn::corpus_bytes({}, mo.vocab));
  const nn::Corpus corpus = nn::build_corpus({}, mo.vocab, mo.seed, mo.seq);
  std::printf("lrsweep: %zu runs (%zu variants x %zu lrs x %zu seeds), %zu steps each\n", cells, variants.size(),
              so.lrs.size(), ex.seeds, so.steps);
  std::printf("  model: layers %zu, d_model %zu, heads %zu, d_ff %zu, init %s; batch %zu x seq %zu%s\n", mo.layers,
              mo.d_model, mo.heads, mo.config().ff(), mo.init.c_str(), mo.batch, mo.seq, mo.qk_norm == "none" ? "" : ("; qk-norm " + mo.qk_norm + " where a variant sets none").c_str());
  std::printf("  %s, cosine decay to 0.1 lr (+warmup: linear over %zu steps first), no clipping; +z: C = %g\n",
              opt.text().c_str(), so.warmup, so.z_coef);
  std::printf("  Markov corpus: uniform log V = %.4f, entropy-rate floor %.4f; %u parallel jobs\n", corpus.uniform,
              corpus.floor, ex.jobs);
  Grid grid;
  grid.axis("variant", so.variants).axis("lr", labels(so.lrs)).axis("seed", labels(ex.seed_list()));
  const auto runs = run_steps<SweepRun>(ex, grid, so.steps, [&](const Cell& c, Tick& tick) {
    return run_one(ex.cell_model(c), variants[c["variant"]], corpus, so.lrs[c["lr"]], so, opt, tick, ex, c);
  });
  if (!runs) return;
  report(Sweep{{*runs, grid}, so}, corpus, ex.seed_list(), ex.out);
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
  add_flag(ex.app, "--lrs", so.lrs, "peak learning rates (comma-separated)", RealRange::above(0));
  add_training_flags(ex.app, so, {"--steps", "--eval-batches"});
  describe(ex.app, "--steps", "training steps per run (warmup, then a cosine decay to 0.1 lr)");
  describe(ex.app, "--eval-batches", "held-out batches averaged for the losses at init and at the end");
  add_flag(ex.app, "--warmup", so.warmup, "linear-warmup steps of the +warmup variants", Whole{0});
  add_flag(ex.app, "--z-coef", so.z_coef, "C of the +z variants' z-loss", RealRange::above(0));
  add_optimizer_flags(ex.app, opt, false);
  describe(ex.app, "--seeds", "seeds per (variant, lr): the sensitivity is computed per seed, then mean ± std");
  describe(ex.app, "--vocab", "vocabulary of the Markov corpus");
  ex.check_flags = [&] { return sweep_flag_problem(ex.app, so, ex.model); };
  ex.prints_time = true;
  return ex.main(argc, argv, [&] { run(ex, so, opt); });
}
