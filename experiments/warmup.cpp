// warmup: which placements train, stick or diverge, at which learning rate, with and without warmup.
//
// A grid: placements x peak learning rates x warmup lengths x corpora (the synthetic Markov corpus,
// whose entropy rate is a known loss floor, and the characters of a real text file), each run trained
// from scratch with Adam(beta1 0.9, beta2 0.98, eps 1e-8), no weight decay, a linear warmup from
// lr/W to lr over W steps and then a constant rate (W = 0: constant from the first step), and no
// gradient clipping unless --clip is given. Each run ends with a held-out loss (the mean over
// --eval-batches validation batches) and a verdict (experiments/common/training.hpp):
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
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <tuple>

#include "engine/engine.hpp"
#include "experiments/common/graph.hpp"
#include "experiments/common/options.hpp"
#include "experiments/common/report.hpp"
#include "experiments/common/run.hpp"
#include "experiments/common/training.hpp"
#include "nn/optim.hpp"
#include "nn/transformer_lm.hpp"

using namespace gs;
using namespace gs::experiments;
using Clock = std::chrono::steady_clock;

namespace {

struct GridOptions {
  std::vector<std::string> placements = {"post", "pre", "peri", "deepnorm", "rezero"};
  std::vector<double> lrs = {1e-3, 3e-3, 1e-2, 3e-2};
  std::vector<std::size_t> warmups = {0, 100};
  std::vector<std::string> datasets = {"markov", "text"};
  std::string text = "/usr/share/common-licenses/GPL-3";
  std::size_t steps = 300;
  std::size_t eval_batches = 20;
  double clip = 0.0;
  double margin = 0.05;
  std::size_t markov_order = 2;
  double markov_concentration = 0.05;
  std::size_t window = 10;  // steps per point of the loss curves
  unsigned jobs = 2;
};

struct RunSpec {
  std::size_t dataset;  // index into the corpora
  std::string placement;
  double lr;
  std::size_t warmup;
  unsigned seed;
};

struct RunResult {
  std::vector<double> losses;  // training loss of each step; the run stops at the first NaN/Inf
  double final_loss = NAN;     // held-out loss after the last step (NaN if the run diverged to NaN/Inf)
  std::size_t blew_up = 0;     // the step (1-based) whose loss was NaN/Inf; 0: none
  Verdict verdict = Verdict::diverged;
};

// The grid's progress, shared by the worker threads.
class GridProgress {
 public:
  explicit GridProgress(std::size_t total_steps) : bar_(total_steps), start_(Clock::now()) {}
  void advance(std::size_t steps, double loss, double lr, double grad_norm, std::size_t tokens) {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ += steps;
    tokens_ += tokens;
    const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    bar_.update(done_, loss, lr, grad_norm, static_cast<double>(tokens_) / std::max(seconds, 1e-9));
  }
  void finish() { bar_.finish(); }

 private:
  std::mutex mutex_;
  ProgressBar bar_;
  Clock::time_point start_;
  std::size_t done_ = 0, tokens_ = 0;
};

Thresholds thresholds_of(const Corpus& c, double margin) { return Thresholds{c.uniform, c.unigram, margin}; }

// One run of the grid: a fresh model, Adam(0.9, 0.98), --steps steps, then the held-out loss.
RunResult run_one(const RunSpec& spec, const Corpus& corpus, const ModelOptions& mo, const GridOptions& go,
                  GridProgress& progress) {
  ModelOptions m = mo;
  m.placement = spec.placement;
  m.vocab = corpus.data.vocab();
  m.seed = spec.seed;
  nn::TransformerLM model(m.config());
  nn::Adam adam(model.named_parameters(), nn::AdamOptions{0.9, 0.98, 1e-8, 0.0, false});
  const nn::Schedule schedule{nn::ScheduleKind::warmup, spec.lr, spec.warmup, go.steps, 0.1};
  const StepSetup setup{&corpus.data, m.batch, m.seq, spec.seed, schedule, go.clip};
  RunResult r;
  for (std::size_t step = 0; step < go.steps; ++step) {
    const StepResult s = train_step(model, adam, setup, step);
    r.losses.push_back(s.loss);
    if (!s.finite()) {
      r.blew_up = step + 1;
      progress.advance(go.steps - step, s.loss, s.lr, s.grad_norm, 0);
      break;
    }
    progress.advance(1, s.loss, s.lr, s.grad_norm, m.batch * m.seq);
  }
  if (r.blew_up == 0) r.final_loss = evaluate(model, corpus.data, m.batch, m.seq, go.eval_batches, spec.seed);
  r.verdict = verdict_of(r.final_loss, thresholds_of(corpus, go.margin));
  return r;
}

// Runs every spec on `jobs` threads (each thread has its own tape); results[i] belongs to specs[i].
std::vector<RunResult> run_grid(const std::vector<RunSpec>& specs, const std::vector<Corpus>& corpora,
                                const ModelOptions& mo, const GridOptions& go) {
  std::vector<RunResult> results(specs.size());
  GridProgress progress(specs.size() * go.steps);
  parallel_for(specs.size(), go.jobs,
               [&](std::size_t i) { results[i] = run_one(specs[i], corpora[specs[i].dataset], mo, go, progress); });
  progress.finish();
  return results;
}

std::vector<RunSpec> grid_specs(const GridOptions& go, std::size_t corpora, unsigned seed0, std::size_t seeds) {
  std::vector<RunSpec> specs;
  for (std::size_t d = 0; d < corpora; ++d)
    for (const std::string& p : go.placements)
      for (std::size_t w : go.warmups)
        for (double lr : go.lrs)
          for (std::size_t s = 0; s < seeds; ++s) specs.push_back({d, p, lr, w, seed0 + static_cast<unsigned>(s)});
  return specs;
}

// ---- reporting ----

// The runs of one grid cell (dataset, placement, warmup, lr), one per seed.
using CellKey = std::tuple<std::size_t, std::string, std::size_t, double>;
using Cells = std::map<CellKey, std::vector<const RunResult*>>;

Cells group_cells(const std::vector<RunSpec>& specs, const std::vector<RunResult>& results) {
  Cells cells;
  for (std::size_t i = 0; i < specs.size(); ++i)
    cells[{specs[i].dataset, specs[i].placement, specs[i].warmup, specs[i].lr}].push_back(&results[i]);
  return cells;
}

Stat final_stat(const std::vector<const RunResult*>& runs) {
  std::vector<double> v;
  for (const RunResult* r : runs) v.push_back(r->final_loss);
  return stat_of(v);
}

// "trained", or "2 stuck, 1 trained" when the seeds disagree; with "@step" where a run blew up to NaN.
std::string verdict_text(const std::vector<const RunResult*>& runs) {
  std::map<Verdict, std::size_t> count;
  std::size_t first_blow_up = 0;
  for (const RunResult* r : runs) {
    ++count[r->verdict];
    if (r->blew_up && (first_blow_up == 0 || r->blew_up < first_blow_up)) first_blow_up = r->blew_up;
  }
  std::string text;
  for (const auto& [v, n] : count) {
    if (!text.empty()) text += ", ";
    if (count.size() > 1 || n < runs.size()) text += std::to_string(n) + " ";
    text += to_string(v);
  }
  if (first_blow_up) text += " (NaN at step " + std::to_string(first_blow_up) + ")";
  return text;
}

std::string lr_text(double lr) { return fmt(lr, 3); }

// The grid of one corpus as a table: a row per (placement, warmup), a column per learning rate, each
// cell "final loss verdict" (and the gap to the floor for trained Markov runs).
Table corpus_table(const Cells& cells, std::size_t d, const Corpus& corpus, const GridOptions& go) {
  std::vector<std::string> columns = {"placement", "warmup"};
  for (double lr : go.lrs) columns.push_back("lr " + lr_text(lr));
  Table t(columns);
  for (const std::string& p : go.placements)
    for (std::size_t w : go.warmups) {
      std::vector<std::string> row = {p, std::to_string(w)};
      for (double lr : go.lrs) {
        const auto& runs = cells.at({d, p, w, lr});
        const Stat s = final_stat(runs);
        std::string cell = fmt(s, 3) + " " + verdict_text(runs);
        const bool all_trained =
            std::all_of(runs.begin(), runs.end(), [](const RunResult* r) { return r->verdict == Verdict::trained; });
        if (!std::isnan(corpus.floor) && all_trained) cell += " (+" + fmt(s.mean - corpus.floor, 2) + ")";
        row.push_back(cell);
      }
      t.add_row(row);
    }
  return t;
}

// Every run (one row per seed): what runs.csv holds.
Table runs_table(const std::vector<RunSpec>& specs, const std::vector<RunResult>& results,
                 const std::vector<Corpus>& corpora, const GridOptions& go) {
  Table t({"dataset", "placement", "warmup", "lr", "seed", "final_loss", "verdict", "nan_at_step", "uniform_logV",
           "unigram_H1", "margin", "floor", "gap_to_floor"});
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const RunSpec& s = specs[i];
    const RunResult& r = results[i];
    const Corpus& c = corpora[s.dataset];
    t.add_row({go.datasets[s.dataset], s.placement, std::to_string(s.warmup), lr_text(s.lr), std::to_string(s.seed),
               fmt(r.final_loss, 6), to_string(r.verdict), std::to_string(r.blew_up), fmt(c.uniform, 6),
               fmt(c.unigram, 6), fmt(go.margin), fmt(c.floor, 6), fmt(r.final_loss - c.floor, 6)});
  }
  return t;
}

// The training loss averaged over windows of `window` steps and over seeds; the curve ends at the
// first window in which any seed's loss was NaN/Inf.
Series loss_curve(const std::vector<const RunResult*>& runs, std::size_t steps, std::size_t window, std::string title) {
  Series s{std::move(title), {}, {}, {}};
  for (std::size_t start = 0; start + window <= steps; start += window) {
    double sum = 0.0;
    for (const RunResult* r : runs)
      for (std::size_t k = start; k < start + window; ++k) sum += k < r->losses.size() ? r->losses[k] : NAN;
    const double mean = sum / static_cast<double>(window * runs.size());
    if (!std::isfinite(mean)) break;
    s.x.push_back(static_cast<double>(start + window));
    s.y.push_back(mean);
  }
  return s;
}

Series flat_line(std::string title, double x0, double x1, double y) { return {std::move(title), {x0, x1}, {y, y}, {}}; }

// One plot per (corpus, placement): the training-loss curves of every (lr, warmup).
void draw_curves(const Cells& cells, std::size_t d, const Corpus& corpus, const GridOptions& go,
                 const std::filesystem::path& dir) {
  const std::string& name = go.datasets[d];
  for (const std::string& p : go.placements) {
    const std::string title =
        name + ", " + p + ": training loss (mean over " + std::to_string(go.window) + "-step windows)";
    Plot plot{title, "step", "loss (nats)", false, false, {}};
    double highest = 0.0;
    for (std::size_t w : go.warmups)
      for (double lr : go.lrs) {
        plot.series.push_back(loss_curve(cells.at({d, p, w, lr}), go.steps, go.window,
                                         "lr " + lr_text(lr) + ", warmup " + std::to_string(w)));
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
    draw(plot, dir, "curves_" + name + "_" + p);
  }
}

// One plot per (corpus, warmup): final held-out loss against the learning rate, a line per placement.
void draw_finals(const Cells& cells, std::size_t d, const Corpus& corpus, const GridOptions& go,
                 const std::filesystem::path& dir) {
  const std::string& name = go.datasets[d];
  for (std::size_t w : go.warmups) {
    const std::string title = name + ", warmup " + std::to_string(w) + ": final held-out loss (missing point: NaN)";
    Plot plot{title, "peak learning rate", "loss (nats)", true, false, {}};
    for (const std::string& p : go.placements) {
      Series s{p, {}, {}, {}};
      for (double lr : go.lrs) {
        const auto& runs = cells.at({d, p, w, lr});
        const Stat st = final_stat(runs);
        if (!std::isfinite(st.mean)) continue;
        s.x.push_back(lr);
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
    draw(plot, dir, "final_" + name + "_warmup" + std::to_string(w));
  }
}

void print_corpus(std::size_t d, const Corpus& c, const GridOptions& go) {
  std::printf("\n%s: %s, vocab %zu, %zu training / %zu held-out tokens\n", go.datasets[d].c_str(), c.name.c_str(),
              c.data.vocab(), c.data.tokens(nn::Split::train).size(), c.data.tokens(nn::Split::validation).size());
  std::printf("  uniform loss log V = %.4f; unigram entropy H1 = %.4f", c.uniform, c.unigram);
  if (!std::isnan(c.floor)) std::printf("; entropy-rate floor %.4f", c.floor);
  std::printf(
      "\n  verdict thresholds: diverged if NaN/Inf or final > %.4f (log V + %g); stuck if final > %.4f "
      "(H1 - %g); else trained\n",
      c.uniform + go.margin, go.margin, c.unigram - go.margin, go.margin);
}

void report(const std::vector<RunSpec>& specs, const std::vector<RunResult>& results,
            const std::vector<Corpus>& corpora, const GridOptions& go, const RunOptions& ro) {
  const Cells cells = group_cells(specs, results);
  const std::filesystem::path dir = ro.out;
  std::filesystem::create_directories(dir);
  for (std::size_t d = 0; d < corpora.size(); ++d) {
    print_corpus(d, corpora[d], go);
    const Table t = corpus_table(cells, d, corpora[d], go);
    std::printf("  final held-out loss and verdict%s:\n\n%s",
                std::isnan(corpora[d].floor) ? "" : " (+gap to the floor)", t.to_text().c_str());
    t.write_csv(dir / ("grid_" + go.datasets[d] + ".csv"));
    draw_curves(cells, d, corpora[d], go, dir);
    draw_finals(cells, d, corpora[d], go, dir);
  }
  runs_table(specs, results, corpora, go).write_csv(dir / "runs.csv");
  std::printf(
      "\nwrote %s: runs.csv, grid_<dataset>.csv, curves_<dataset>_<placement> and "
      "final_<dataset>_warmup<W> (.png, .svg)\n",
      dir.string().c_str());
}

void add_grid_options(CLI::App& app, GridOptions& go) {
  app.add_option("--placements", go.placements, "placements of the grid (comma-separated)")
      ->delimiter(',')
      ->check(CLI::IsMember({"post", "pre", "peri", "sandwich", "deepnorm", "rezero"}))
      ->capture_default_str();
  app.add_option("--lrs", go.lrs, "peak learning rates (comma-separated)")->delimiter(',')->capture_default_str();
  app.add_option("--warmups", go.warmups, "linear-warmup lengths W in steps, 0: none (comma-separated)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--datasets", go.datasets, "corpora: markov and/or text (comma-separated)")
      ->delimiter(',')
      ->check(CLI::IsMember({"markov", "text"}))
      ->capture_default_str();
  app.add_option("--text", go.text, "the text file of the text corpus (one token per distinct byte)")
      ->check(CLI::ExistingFile)
      ->capture_default_str();
  app.add_option("--steps", go.steps, "training steps per run")->check(experiments::positive)->capture_default_str();
  app.add_option("--eval-batches", go.eval_batches, "held-out batches averaged for the final loss")
      ->check(experiments::positive)
      ->capture_default_str();
  app.add_option("--clip", go.clip, "clip the global gradient norm to this (0: no clipping)")->capture_default_str();
  app.add_option("--margin", go.margin, "verdict margin in nats (see the verdicts above)")->capture_default_str();
  app.add_option("--markov-order", go.markov_order, "Markov corpus: tokens of context")->capture_default_str();
  app.add_option("--markov-concentration", go.markov_concentration, "Markov corpus: Dirichlet concentration")
      ->capture_default_str();
  app.add_option("--window", go.window, "steps averaged per point of the loss curves")
      ->check(experiments::positive)
      ->capture_default_str();
  app.add_option("--jobs", go.jobs, "runs trained in parallel threads (results do not depend on it)")
      ->check(experiments::positive)
      ->capture_default_str();
}

std::vector<Corpus> load_corpora(const GridOptions& go, const ModelOptions& mo) {
  std::vector<Corpus> corpora;
  for (const std::string& name : go.datasets) {
    if (name == "text") {
      corpora.push_back(text_corpus(go.text));
      continue;
    }
    MarkovCorpusOptions o;
    o.vocab = mo.vocab;
    o.order = go.markov_order;
    o.concentration = go.markov_concentration;
    o.seed = mo.seed;
    corpora.push_back(markov_corpus(o, mo.seq));
  }
  return corpora;
}

}  // namespace

int main(int argc, char** argv) {
  setup_process();

  CLI::App app{
      "Training-stability grid: placements x learning rates x warmup, Adam(0.9, 0.98), on a Markov corpus "
      "and a text file; final held-out loss and a diverged/stuck/trained verdict per run.\n"
      "Verdicts: diverged = NaN/Inf or final loss > log V + margin; stuck = final loss > H1 - margin (H1: "
      "the corpus's unigram entropy, what a model ignoring the context reaches); trained = below that."};
  ModelOptions mo = stability_model();
  add_model_options(app, mo);
  RunOptions ro;
  ro.out = "out/warmup";
  ro.seeds = 1;
  add_run_options(app, ro);
  GridOptions go;
  add_grid_options(app, go);
  app.get_option("--seeds")->description(
      "seeds per grid cell (default 1 to keep the grid fast; the cell then "
      "shows mean ± std and how many seeds gave each verdict)");
  app.get_option("--vocab")->description("vocabulary of the Markov corpus (the text file sets its own)");
  app.get_option("--placement")->description("the placement of the --dump model (the grid uses --placements)");
  app.get_option("--dump")->description(
      "write the model of --placement at init (Markov vocab) with its gradients on "
      "one fresh batch to this directory");
  std::string graph;
  add_graph_option(app, graph);
  finish_cli(app);
  CLI11_PARSE(app, argc, argv);

  try {
    if (!graph.empty()) {  // --graph: one forward and backward pass drawn, instead of the run
      write_model_graph(graph, mo);
      return 0;
    }
    const auto start = Clock::now();
    const std::vector<Corpus> corpora = load_corpora(go, mo);
    const std::vector<RunSpec> specs = grid_specs(go, corpora.size(), mo.seed, ro.seeds);
    std::printf("warmup: %zu runs (%zu placements x %zu lrs x %zu warmups x %zu corpora x %zu seeds), %zu steps each\n",
                specs.size(), go.placements.size(), go.lrs.size(), go.warmups.size(), corpora.size(), ro.seeds,
                go.steps);
    std::printf("  model: layers %zu, d_model %zu, heads %zu, d_ff %zu, init %s; batch %zu x seq %zu\n", mo.layers,
                mo.d_model, mo.heads, mo.config().ff(), mo.init.c_str(), mo.batch, mo.seq);
    std::printf("  Adam(0.9, 0.98, eps 1e-8), linear warmup then constant lr, clip %s; %u parallel jobs\n",
                go.clip > 0 ? fmt(go.clip).c_str() : "off", go.jobs);
    std::fflush(stdout);
    const std::vector<RunResult> results = run_grid(specs, corpora, mo, go);
    report(specs, results, corpora, go, ro);
    std::printf("time: %.1f s\n", std::chrono::duration<double>(Clock::now() - start).count());
    if (!ro.dump.empty()) {
      nn::TransformerLM model(mo.config());
      dump_model(ro.dump, model, mo.batch, mo.seq, mo.seed);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warmup: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
