// warmup: which placements train, stick or diverge, at which learning rate, with and without warmup.
//
// A grid: placements x peak learning rates x warmup lengths x corpora (the synthetic Markov corpus,
// whose entropy rate is a known loss floor, and the characters of a real text file), each run trained
// from scratch with Adam(beta1 0.9, beta2 0.98, eps 1e-8), no weight decay, a linear warmup from
// lr/W to lr over W steps and then a constant rate (W = 0: constant from the first step), and no
// gradient clipping unless --clip is given. Each run ends with a held-out loss (the mean over
// --eval-batches validation batches) and a verdict (experiments/lib/training.hpp):
//   diverged   the loss became NaN/Inf, or the final loss is above log V + margin (worse than
//              predicting the uniform distribution)
//   stuck      the final loss is above H1 - margin, H1 the entropy of the corpus's token frequencies:
//              no better than a model that ignores the context (H1 <= log V; for the Markov corpus it is
//              close to log V, so this is "near the uniform loss")
//   trained    below that; for the Markov corpus the gap to the entropy-rate floor is printed too.
// The claim behind the grid (Xiong et al. 2020, Liu et al. 2020, Wang et al. 2022): Post-LN needs
// warmup, and more of it the larger the learning rate; Pre-LN trains without it.
//
//   build/bin/warmup                                          the default grid (a few minutes, 2 cores)
//   build/bin/warmup --placements post,pre --lrs 1e-3,1e-2 --datasets markov --seeds 3
#include <map>

#include "experiments/lib/experiment.hpp"

namespace {

struct GridOptions : TrainingOptions {  // --steps 300 --eval-batches 20 --clip 0 --margin 0.05 --window 10
  std::vector<double> lrs = {1e-3, 3e-3, 1e-2, 3e-2};
  std::vector<std::size_t> warmups = {0, 100};
  std::vector<std::string> datasets = {"markov", "text"};
  nn::CorpusOptions corpus;     // --markov-order, --markov-concentration; --text is the text corpus's file
  OptimizerSetup opt;       // Adam(0.9, 0.98, eps 1e-8) unless the flags say otherwise
};

// What one run of the grid measured.
struct WarmupRun {
  std::vector<double> losses;  // the training loss of each step; the run stops at the first NaN/Inf
  double final_loss = NAN;     // held out, after the last step; NaN if the run diverged to NaN/Inf
  std::size_t blew_up = 0;     // the 1-based step whose loss was NaN/Inf, 0: none
  Verdict verdict = Verdict::diverged;
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WarmupRun, losses, final_loss, blew_up, verdict)

// One run of the grid: a fresh model, Adam(0.9, 0.98), --steps steps, then the held-out loss.
// With --html, the first seed's run is recorded for the explorer page.
WarmupRun run_one(ModelOptions m, const nn::Corpus& corpus, double lr, std::size_t warmup, const GridOptions& go, Tick& tick,
                  Experiment& ex, const Cell& cell) {
  m.vocab = corpus.data.vocab();
  nn::TransformerLM model(m.config());
  const std::unique_ptr<nn::Optimizer> optimizer = go.opt.make(model);
  const nn::Schedule schedule = go.opt.with_hold({nn::ScheduleKind::warmup, lr, warmup, go.steps, 0.1});
  const auto rec = cell["seed"] == 0 ? ex.recorder(cell.grid->describe(cell.index), model) : nullptr;
  const nn::StepSetup setup{&corpus.data, m.batch, m.seq, m.seed, schedule, go.clip, step_hooks(model, rec.get())};
  WarmupRun run;
  for (std::size_t step = 0; step < go.steps && run.blew_up == 0; ++step) {
    const nn::StepResult s = nn::train_step(model, *optimizer, setup, step);
    run.losses.push_back(s.loss);
    if (!s.finite()) {
      refuse_first_step(s, step, go.opt.loss_term_flag());
      run.blew_up = step + 1;
    }
    char what[96];
    std::snprintf(what, sizeof what, "loss %.4f lr %.2e |g| %.3f", s.loss, s.lr, s.grad_norm);
    tick(1, what);
  }
  run.final_loss = run.blew_up ? NAN : nn::evaluate(model, corpus.data, m.batch, m.seq, go.eval_batches, m.seed);
  run.verdict = verdict_of(run.final_loss, Thresholds{corpus.uniform, corpus.unigram, go.margin});
  if (rec) {
    rec->run().facts = {{"program", "warmup"}, {"run", cell.grid->describe(cell.index)}, {"data", corpus.name},
                        {"held-out loss", fmt(run.final_loss)}, {"verdict", to_string(run.verdict)}};
    ex.add_run(cell.index, rec->take());
  }
  return run;
}

// ---- reporting ----

// Every run, and the grid of its cells: axes dataset, placement, warmup, lr, seed.
struct Runs : GridRuns<WarmupRun> {
  const GridOptions& go;
  // The seeds of corpus d, placement p, warmup w, lr l (each an index along its axis).
  std::vector<const WarmupRun*> at(std::size_t d, std::size_t p, std::size_t w, std::size_t l) const {
    return seeds({d, p, w, l});
  }
  const std::vector<std::string>& placements() const { return grid.labels(1); }
};

Stat final_stat(const std::vector<const WarmupRun*>& runs) {
  std::vector<double> v;
  for (const WarmupRun* r : runs) v.push_back(r->final_loss);
  return stat_of(v);
}

// "trained", or "2 stuck, 1 trained" when the seeds disagree; with "@step" where a run blew up to NaN.
std::string cell_verdicts(const std::vector<const WarmupRun*>& runs) {
  std::vector<Verdict> verdicts;
  std::size_t first_blow_up = 0;
  for (const WarmupRun* r : runs) {
    verdicts.push_back(r->verdict);
    if (r->blew_up && (first_blow_up == 0 || r->blew_up < first_blow_up)) first_blow_up = r->blew_up;
  }
  return verdict_text(verdicts, first_blow_up);
}

std::string lr_text(double lr) { return fmt(lr, 3); }

// The grid of one corpus as a table: a row per (placement, warmup), a column per learning rate, each
// cell "final loss verdict" (and the gap to the floor for trained Markov runs).
Table corpus_table(const Runs& g, std::size_t d, const nn::Corpus& corpus) {
  std::vector<std::string> columns = {"placement", "warmup"};
  for (double lr : g.go.lrs) columns.push_back("lr " + lr_text(lr));
  Table t(columns);
  for (std::size_t p = 0; p < g.placements().size(); ++p)
    for (std::size_t w = 0; w < g.go.warmups.size(); ++w) {
      std::vector<std::string> row = {g.placements()[p], std::to_string(g.go.warmups[w])};
      for (std::size_t l = 0; l < g.go.lrs.size(); ++l) {
        const auto runs = g.at(d, p, w, l);
        const Stat s = final_stat(runs);
        std::string cell = fmt(s, 3) + " " + cell_verdicts(runs);
        const bool all_trained =
            std::all_of(runs.begin(), runs.end(), [](const WarmupRun* r) { return r->verdict == Verdict::trained; });
        if (!std::isnan(corpus.floor) && all_trained) cell += " (+" + fmt(s.mean - corpus.floor, 2) + ")";
        row.push_back(cell);
      }
      t.add_row(row);
    }
  return t;
}

// Every run (one row per seed, in the grid's order): what runs.csv holds.
Table runs_table(const Runs& g, const std::vector<nn::Corpus>& corpora, const std::vector<unsigned>& seeds) {
  Table t({"dataset", "placement", "warmup", "lr", "seed", "final_loss", "verdict", "nan_at_step", "uniform_logV",
           "unigram_H1", "margin", "floor", "gap_to_floor"});
  for (std::size_t i = 0; i < g.grid.size(); ++i) {
    const Cell c{&g.grid, i};
    const WarmupRun& r = g.runs[i];
    const nn::Corpus& corpus = corpora[c["dataset"]];
    t.add_row({g.go.datasets[c["dataset"]], g.placements()[c["placement"]], std::to_string(g.go.warmups[c["warmup"]]),
               lr_text(g.go.lrs[c["lr"]]), std::to_string(seeds[c["seed"]]), fmt(r.final_loss, 6), to_string(r.verdict),
               std::to_string(r.blew_up), fmt(corpus.uniform, 6), fmt(corpus.unigram, 6),
               fmt(g.go.margin), fmt(corpus.floor, 6), fmt(r.final_loss - corpus.floor, 6)});
  }
  return t;
}

// One plot per (corpus, placement): the training-loss curves of every (lr, warmup).
void draw_curves(const Runs& g, std::size_t d, const nn::Corpus& corpus, const std::filesystem::path& dir) {
  const GridOptions& go = g.go;
  const std::string& name = go.datasets[d];
  for (std::size_t p = 0; p < g.placements().size(); ++p) {
    const std::string title =
        name + ", " + g.placements()[p] + ": training loss (mean over " + std::to_string(go.window) + "-step windows)";
    Plot plot{title, "step", "loss (nats)", false, false, {}};
    double highest = 0.0;
    for (std::size_t w = 0; w < go.warmups.size(); ++w)
      for (std::size_t l = 0; l < go.lrs.size(); ++l) {
        std::vector<const std::vector<double>*> losses;
        for (const WarmupRun* r : g.at(d, p, w, l)) losses.push_back(&r->losses);
        plot.series.push_back(loss_curve(losses, go.steps, go.window,
                                         "lr " + lr_text(go.lrs[l]) + ", warmup " + std::to_string(go.warmups[w])));
        for (double y : plot.series.back().y) highest = std::max(highest, y);
      }
    if (highest > 2 * corpus.uniform) {  // a run that blew up would flatten the others on a linear axis
      plot.log_y = true;
      plot.ylabel = "loss (nats, log scale)";
    }
    const double x1 = static_cast<double>(go.steps);
    plot.series.push_back(flat_line("uniform log V", 0, x1, corpus.uniform));
    if (!std::isnan(corpus.floor))
      plot.series.push_back(flat_line("entropy-rate floor", 0, x1, corpus.floor));
    else
      plot.series.push_back(flat_line("unigram H1", 0, x1, corpus.unigram));
    draw(plot, dir, "curves_" + name + "_" + file_part(g.placements()[p]));
  }
}

// One plot per (corpus, warmup): final held-out loss against the learning rate, a line per placement.
void draw_finals(const Runs& g, std::size_t d, const nn::Corpus& corpus, const std::filesystem::path& dir) {
  const GridOptions& go = g.go;
  const std::string& name = go.datasets[d];
  for (std::size_t w = 0; w < go.warmups.size(); ++w) {
    const std::string title = name + ", warmup " + std::to_string(go.warmups[w]) + ": final held-out loss (missing point: NaN)";
    Plot plot{title, "peak learning rate", "loss (nats)", true, false, {}};
    for (std::size_t p = 0; p < g.placements().size(); ++p) {
      Series s{g.placements()[p], {}, {}, {}};
      for (std::size_t l = 0; l < go.lrs.size(); ++l) {
        const Stat st = final_stat(g.at(d, p, w, l));
        if (!std::isfinite(st.mean)) continue;
        s.x.push_back(go.lrs[l]);
        s.y.push_back(st.mean);
        s.err.push_back(st.std);
      }
      plot.series.push_back(s);
    }
    const double x0 = *std::min_element(go.lrs.begin(), go.lrs.end()),
                 x1 = *std::max_element(go.lrs.begin(), go.lrs.end());
    plot.series.push_back(flat_line("uniform log V", x0, x1, corpus.uniform));
    plot.series.push_back(flat_line("stuck above (H1 - margin)", x0, x1, corpus.unigram - go.margin));
    if (!std::isnan(corpus.floor)) plot.series.push_back(flat_line("entropy-rate floor", x0, x1, corpus.floor));
    draw(plot, dir, "final_" + name + "_warmup" + std::to_string(go.warmups[w]));
  }
}

void print_corpus(const std::string& name, const nn::Corpus& c, double margin) {
  std::printf("\n%s: %s, vocab %zu, %zu training / %zu held-out tokens\n", name.c_str(), c.name.c_str(),
              c.data.vocab(), c.data.tokens(nn::Split::train).size(), c.data.tokens(nn::Split::validation).size());
  std::printf("  uniform loss log V = %.4f; unigram entropy H1 = %.4f", c.uniform, c.unigram);
  if (!std::isnan(c.floor)) std::printf("; entropy-rate floor %.4f", c.floor);
  std::printf(
      "\n  verdict thresholds: diverged if NaN/Inf or final > %.4f (log V + %g); stuck if final > %.4f "
      "(H1 - %g); else trained\n",
      c.uniform + margin, margin, c.unigram - margin, margin);
}

void report(const Runs& g, const std::vector<nn::Corpus>& corpora, const std::vector<unsigned>& seeds,
            const std::filesystem::path& dir) {
  for (std::size_t d = 0; d < corpora.size(); ++d) {
    print_corpus(g.go.datasets[d], corpora[d], g.go.margin);
    const Table t = corpus_table(g, d, corpora[d]);
    std::printf("  final held-out loss and verdict%s:\n\n%s",
                std::isnan(corpora[d].floor) ? "" : " (+gap to the floor)", t.to_text().c_str());
    t.write_csv(dir / ("grid_" + g.go.datasets[d] + ".csv"));
    draw_curves(g, d, corpora[d], dir);
    draw_finals(g, d, corpora[d], dir);
  }
  runs_table(g, corpora, seeds).write_csv(dir / "runs.csv");
  std::printf(
      "\nwrote %s: runs.csv, grid_<dataset>.csv, curves_<dataset>_<placement> and "
      "final_<dataset>_warmup<W> (.png, .svg)\n",
      dir.string().c_str());
}

std::vector<nn::Corpus> load_corpora(const GridOptions& go, const ModelOptions& mo) {
  std::vector<nn::Corpus> corpora;
  for (const std::string& name : go.datasets) {
    nn::CorpusOptions one = go.corpus;
    if (name != "text") one.text.clear();
    corpora.push_back(nn::build_corpus(one, mo.vocab, mo.seed, mo.seq));
    check_margin(corpora.back(), go.margin);  // before any run: a margin that leaves no verdict is refused
  }
  return corpora;
}

void run(Experiment& ex, GridOptions& go) {
  const ModelOptions& mo = ex.model;
  keep_first_of_each(go.datasets);
  keep_first_of_each(go.lrs);
  keep_first_of_each(go.warmups);
  const bool text = std::count(go.datasets.begin(), go.datasets.end(), "text") > 0;
  nn::ModelConfig largest = mo.config();
  largest.vocab = std::max<std::size_t>(mo.vocab, text ? 256 : 0);
  const std::size_t cells = go.datasets.size() * ex.placements.size() * go.warmups.size() * go.lrs.size() * ex.seeds;
  nn::CorpusOptions markov = go.corpus;
  markov.text.clear();
  ex.check_memory(largest, 2, ex.html_wanted(), cells, nn::corpus_bytes(markov, mo.vocab) + (text ? nn::corpus_bytes(go.corpus, 0) : 0));
  const std::vector<nn::Corpus> corpora = load_corpora(go, mo);
  std::printf("warmup: %zu runs (%zu placements x %zu lrs x %zu warmups x %zu corpora x %zu seeds), %zu steps each\n",
              cells, ex.placements.size(), go.lrs.size(), go.warmups.size(), corpora.size(), ex.seeds, go.steps);
  std::printf("  model: layers %zu, d_model %zu, heads %zu, d_ff %zu, init %s; batch %zu x seq %zu%s\n", mo.layers,
              mo.d_model, mo.heads, mo.config().ff(), mo.init.c_str(), mo.batch, mo.seq, mo.qk_note().c_str());
  const std::string optimizer = go.opt.text() == OptimizerSetup{}.text() ? "Adam(0.9, 0.98, eps 1e-8)" : go.opt.text();
  std::printf("  %s, linear warmup then constant lr, clip %s; %u parallel jobs\n", optimizer.c_str(),
              go.clip > 0 ? fmt(go.clip).c_str() : "off", ex.jobs);
  Grid grid;
  grid.axis("dataset", go.datasets).axis("placement", ex.placements).axis("warmup", labels(go.warmups));
  grid.axis("lr", labels(go.lrs)).axis("seed", labels(ex.seed_list()));
  const auto runs = run_steps<WarmupRun>(ex, grid, go.steps, [&](const Cell& c, Tick& tick) {
    return run_one(ex.cell_model(c), corpora[c["dataset"]], go.lrs[c["lr"]], go.warmups[c["warmup"]], go, tick, ex, c);
  });
  if (!runs) return;
  report(Runs{{*runs, grid}, go}, corpora, ex.seed_list(), ex.out);
}

}  // namespace

int main(int argc, char** argv) {
  Experiment ex("warmup", "Training-stability grid: placements x learning rates x warmup, Adam(0.9, 0.98), on a "
                "Markov corpus and a text file; final held-out loss and a diverged/stuck/trained verdict per run.\n"
                "Verdicts: diverged = NaN/Inf or final loss > log V + margin; stuck = final loss > H1 - margin (H1: "
                "the corpus's unigram entropy, what a model ignoring the context reaches); trained = below that.",
                "out/warmup");
  ex.model = stability_model();
  ex.seeds = 1;
  GridOptions go;
  add_flag(ex.app, "--lrs", go.lrs, "peak learning rates (comma-separated)", RealRange::above(0));
  add_flag(ex.app, "--warmups", go.warmups, "linear-warmup lengths W in steps, 0: none (comma-separated)", Whole{0});
  add_flag(ex.app, "--datasets", go.datasets, "corpora: markov and/or text (comma-separated)",
           one_of({"markov", "text"}));
  go.corpus.text = "/usr/share/common-licenses/GPL-3";
  add_flag(ex.app, "--text", go.corpus.text, "the text file of the text corpus (one token per distinct byte)",
           regular_file(nn::text_dataset_max_bytes));
  add_training_flags(ex.app, go, {"--steps", "--eval-batches", "--clip", "--margin", "--window"});
  add_corpus_flags(ex.app, go.corpus, false);
  add_optimizer_flags(ex.app, go.opt, true);
  describe(ex.app, "--seeds", "seeds per grid cell (default 1 to keep the grid fast; the cell then "
                                            "shows mean ± std and how many seeds gave each verdict)");
  describe(ex.app, "--vocab", "vocabulary of the Markov corpus (the text file sets its own)");
  ex.check_flags = [&] {
    const std::string window = go.at_most_steps("--window", go.window);
    return window.empty() ? go.warmups_below_steps(go.warmups) : window;
  };
  ex.prints_time = true;
  return ex.main(argc, argv, [&] { run(ex, go); });
}
