// stream: the residual stream of a TransformerLM, forward and backward, per placement and depth.
//
//   build/bin/stream                                   defaults: L in {4, 12}, all five placements, 3 seeds
//   build/bin/stream --layers-list 2,8,24 --placements post,pre --seeds 5
//   build/bin/stream --steps 300 --lr 1e-3 --warmup 100   the same after 300 Adam steps instead of at init
//
// Forward: the size of the residual stream at every position between sublayers -- emb, then each
// block's mid (after attention) and output (after the MLP) -- as the per-position RMS
// sqrt(mean_c x^2) averaged over the B x T positions, and the per-position L2 norm sqrt(sum_c x^2)
// averaged the same way (= sqrt(d) x the RMS; in the CSV); and how far each sublayer is from the
// identity, |F(x)| / |x|: the mean per-position RMS of its branch over that of what the residual add
// adds it to (Sun et al. 2025 measure Pre-LN's deep layers becoming the identity this way).
//
// Backward: d(mean loss)/d(stream) at every position that a sublayer reads, split by the path it came
// back through (analysis/stream_split.hpp): the skip (identity) part is what the sublayer's
// skip op sent (the residual add, or deepnorm's alpha * x), the branch part what every other reader sent
// (the sublayer itself, or the LayerNorm in front of it). Both are read from the tape's recorded
// contributions (Tape::keep_contributions), so skip + branch is the gradient; the program checks
// that and prints the largest difference. Gradient norms are Frobenius norms over the whole (B, T, d)
// tensor, of the gradient of the mean cross-entropy over one batch of a Markov corpus.
//
// Output: tables on the terminal; in --out, stream_forward.csv, stream_backward.csv (every position,
// mean and std over seeds), stream_summary.csv, and plots per depth L: stream_rms_L*, grad_L*,
// grad_ratio_L* (every placement) and split_<placement>_L* (total, skip and branch parts).
// --dump DIR writes DIR/<placement>-L<depth>/ (nn/io/checkpoint.hpp) for the first seed's model of each.
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "experiments/lib/experiment.hpp"
#include "analysis/stream_split.hpp"
#include "experiments/lib/graph.hpp"
#include "nn/data/markov.hpp"

namespace {

// One forward and backward pass, per stream position k = 0 .. 2L (stream_split.hpp).
struct StreamRun {
  double loss = NAN;
  std::vector<double> rms, l2, total;  // every position: forward RMS and L2 norm, |gradient|
  // The positions a sublayer reads, k < 2L: forward, |branch| / |skip| at sublayer k's residual add;
  // backward, |skip part|, |branch part|, their ratio branch / skip, and
  // ||skip_k - gradient_{k+1}|| / ||gradient_{k+1}||.
  std::vector<double> move, skip, branch, ratio, skip_vs_next;
  double check = 0.0;  // the largest |skip + branch - gradient|
};
using Quantity = std::vector<double> StreamRun::*;  // one of its lists: &StreamRun::rms, ...

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StreamRun, loss, rms, l2, total, move, skip, branch, ratio, skip_vs_next, check)

// The pass on `batch`, with the tape keeping every contribution.
StreamRun measure(nn::TransformerLM& model, const nn::Batch& batch) {
  Tape tape;
  TapeScope scope(tape);
  tape.keep_contributions = true;
  model.zero_grad();
  StreamRun m;
  const Var loss = model.loss(batch.inputs, batch.targets);
  m.loss = loss.value()();
  loss.backward();
  double check = 0.0;
  const std::vector<StreamPosition> positions = stream_positions(model);
  for (std::size_t k = 0; k < positions.size(); ++k) {
    const StreamPosition& p = positions[k];
    m.rms.push_back(mean_rms(p.value.value()));
    m.l2.push_back(mean_l2(p.value.value()));
    m.total.push_back(norm(p.value.grad()));
    if (p.top) continue;  // read by ln_f or the head, no skip path
    // Forward: how far sublayer k is from the identity, |F(x)| / |x| with F(x) its branch and x what the
    // residual add adds it to (x itself, alpha x for deepnorm, omega * x for admin, h + x for b2t's MLP).
    const nn::BlockTrace& t = model.blocks[k / 2]->last;
    const bool attention = k % 2 == 0;
    const Var& branch_value = attention ? t.attn_branch : t.mlp_branch;
    const Var& skip_value = attention ? t.attn_skip : t.mlp_skip;
    m.move.push_back(mean_rms(branch_value.value()) / mean_rms(skip_value.value()));
    const nn::SkipBranch s = nn::split_skip_branch(p.value);
    m.skip.push_back(norm(s.skip));
    m.branch.push_back(norm(s.branch));
    m.ratio.push_back(norm(s.branch) / norm(s.skip));
    check = std::max(check, max_abs_diff(s.skip + s.branch, p.value.grad()));
    const Array& next = positions[k + 1].value.grad();
    m.skip_vs_next.push_back(gs::norm(Array(s.skip - next)) / gs::norm(next));
  }
  m.check = check;
  return m;
}

// `steps` Adam(0.9, 0.98) updates with linear warmup, on batches drawn in turn by one generator seeded
// with seed + 7919 (so the numbers are those this binary has always printed).
void train(nn::TransformerLM& model, const nn::Dataset& data, const nn::StepSetup& setup, std::size_t steps) {
  Tape tape;
  TapeScope scope(tape);
  nn::AdamOptions adam_options;
  adam_options.beta2 = 0.98;
  nn::Adam adam(model.named_parameters(), adam_options);
  std::mt19937_64 rng(setup.seed + 7919u);
  for (std::size_t step = 0; step < steps; ++step) {
    const nn::StepResult r = nn::train_step(model, adam, setup, step, data.batch(nn::Split::train, setup.batch, setup.seq, rng));
    if (!r.finite())
      throw Error(nn::placement_name(model.config) + " L=" + std::to_string(model.config.layers) + " seed " +
                  std::to_string(setup.seed) + ": " + not_finite_text(r, step) + " (--lr " + fmt(setup.schedule.base_lr) +
                  " is the likely cause)");
  }
}

// "emb", "blocks.0.mid", ... for positions 0 .. 2L.
std::vector<std::string> position_names(std::size_t L) {
  std::vector<std::string> names{"emb"};
  for (std::size_t l = 0; l < L; ++l) {
    std::string b = "blocks.";
    b += std::to_string(l);
    names.push_back(b + ".mid");
    names.push_back(b + ".out");
  }
  return names;
}

using Runs = std::vector<const StreamRun*>;  // one (depth, placement): a run per seed

// The statistic over seeds of quantity[k], or of f(run).
Stat at(const Runs& runs, Quantity quantity, std::size_t k) {
  std::vector<double> v;
  for (const StreamRun* m : runs) v.push_back((m->*quantity).at(k));
  return stat_of(v);
}
template <class F>
Stat over(const Runs& runs, F f) {
  std::vector<double> v;
  for (const StreamRun* m : runs) v.push_back(f(*m));
  return stat_of(v);
}

// What the report reads: the runs of the grid (layers, placement, seed) and its depths.
struct Scan : GridRuns<StreamRun> {
  const std::vector<std::size_t>& depths;
  const std::vector<std::string>& placements() const { return grid.labels(1); }
  // The seeds at depth L (one of `depths`) of placement p (its index).
  Runs at(std::size_t L, std::size_t p) const { return seeds({index_in(depths, L), p}); }
};

// A table with one row per position and one column per placement.
Table position_table(const Scan& s, std::size_t L, Quantity quantity, std::size_t positions) {
  std::vector<std::string> columns{"position"};
  for (const std::string& p : s.placements()) columns.push_back(p);
  Table table(columns);
  const std::vector<std::string> names = position_names(L);
  for (std::size_t k = 0; k < positions; ++k) {
    std::vector<std::string> row{names[k]};
    for (std::size_t p = 0; p < s.placements().size(); ++p) row.push_back(fmt(at(s.at(L, p), quantity, k)));
    table.add_row(row);
  }
  return table;
}

// For a log-scale plot: drops series that are not all positive, noting them in the title.
void draw_log(Plot plot, const std::filesystem::path& dir, const std::string& name) {
  const std::string dropped = drop_nonpositive(plot.series, true);
  if (!dropped.empty()) plot.title += "; not drawn on the log scale: " + dropped;
  draw(plot, dir, name);
}

Series series_of(const std::string& title, const Runs& runs, Quantity quantity, std::size_t n) {
  Series s;
  s.title = title;
  for (std::size_t k = 0; k < n; ++k) {
    const Stat st = at(runs, quantity, k);
    s.x.push_back(static_cast<double>(k));
    s.y.push_back(st.mean);
    s.err.push_back(st.std);
  }
  return s;
}

// Every position of every run's statistics: stream_forward.csv and stream_backward.csv.
void write_positions(const Scan& s, const std::filesystem::path& out) {
  Table forward_csv({"layers", "placement", "k", "position", "rms_mean", "rms_std", "l2_mean", "l2_std", "move_mean",
                     "move_std"});
  Table backward_csv({"layers", "placement", "k", "position", "grad_mean", "grad_std", "skip_mean", "skip_std",
                      "branch_mean", "branch_std", "ratio_mean", "ratio_std", "skip_vs_next_mean", "skip_vs_next_std"});
  auto cell = [](double x) { return fmt(x, 10); };
  for (std::size_t L : s.depths) {
    const std::vector<std::string> names = position_names(L);
    for (std::size_t p = 0; p < s.placements().size(); ++p) {
      const Runs r = s.at(L, p);
      const std::string& placement = s.placements()[p];
      for (std::size_t k = 0; k <= 2 * L; ++k) {
        const Stat rms = at(r, &StreamRun::rms, k), l2 = at(r, &StreamRun::l2, k), g = at(r, &StreamRun::total, k);
        const bool read = k < 2 * L;  // the top: no sublayer reads it
        forward_csv.add_row({std::to_string(L), placement, std::to_string(k), names[k], cell(rms.mean), cell(rms.std),
                             cell(l2.mean), cell(l2.std), read ? cell(at(r, &StreamRun::move, k).mean) : "",
                             read ? cell(at(r, &StreamRun::move, k).std) : ""});
        std::vector<std::string> row{std::to_string(L), placement, std::to_string(k), names[k], cell(g.mean), cell(g.std)};
        for (Quantity quantity : {&StreamRun::skip, &StreamRun::branch, &StreamRun::ratio, &StreamRun::skip_vs_next}) {
          row.push_back(read ? cell(at(r, quantity, k).mean) : "");
          row.push_back(read ? cell(at(r, quantity, k).std) : "");
        }
        backward_csv.add_row(row);
      }
    }
  }
  forward_csv.write_csv(out / "stream_forward.csv");
  backward_csv.write_csv(out / "stream_backward.csv");
}

// The summary, one row per depth and placement; its largest |skip + branch - gradient| in *worst.
Table summary_table(const Scan& s, double* worst) {
  Table summary({"L", "placement", "loss", "RMS emb", "RMS top", "RMS top/emb", "|g| top", "|g| emb", "|g| emb/top",
                 "br/skip mean", "skip vs next", "max|sk+br-g|"});
  for (std::size_t L : s.depths)
    for (std::size_t p = 0; p < s.placements().size(); ++p) {
      const Runs r = s.at(L, p);
      const std::size_t top = 2 * L;
      double check = 0.0;
      for (const StreamRun* m : r) check = std::max(check, m->check);
      *worst = std::max(*worst, check);
      summary.add_row(
          {std::to_string(L), s.placements()[p], fmt(over(r, [](const StreamRun& m) { return m.loss; })),
           fmt(at(r, &StreamRun::rms, 0)), fmt(at(r, &StreamRun::rms, top)),
           fmt(over(r, [&](const StreamRun& m) { return m.rms[top] / m.rms[0]; })),
           fmt(at(r, &StreamRun::total, top)), fmt(at(r, &StreamRun::total, 0)),
           fmt(over(r, [&](const StreamRun& m) { return m.total[0] / m.total[top]; })),
           fmt(over(r, [](const StreamRun& m) { return mean_of(m.ratio); })),
           fmt(over(r, [](const StreamRun& m) {
             double largest = 0.0;
             for (double x : m.skip_vs_next) largest = std::max(largest, x);
             return largest;
           })),
           fmt(check, 2)});
    }
  return summary;
}

void report(const Scan& s, const std::filesystem::path& out) {
  write_positions(s, out);
  for (std::size_t L : s.depths) {  // the tables, one set per depth
    std::printf("==== L = %zu ====\n\n", L);
    std::printf("forward: residual-stream RMS, mean over positions of sqrt(mean_c x^2)\n%s\n",
                position_table(s, L, &StreamRun::rms, 2 * L + 1).to_text().c_str());
    std::printf("forward: |F(x)| / |x| of the sublayer that reads each position, the mean per-position RMS of its "
                "branch over that of its skip input (0: the sublayer is the identity)\n%s\n",
                position_table(s, L, &StreamRun::move, 2 * L).to_text().c_str());
    std::printf("backward: |dL/dx|, the gradient's norm at each stream position\n%s\n",
                position_table(s, L, &StreamRun::total, 2 * L + 1).to_text().c_str());
    std::printf("backward: |skip part|, what arrived through the next sublayer's skip path\n%s\n",
                position_table(s, L, &StreamRun::skip, 2 * L).to_text().c_str());
    std::printf("backward: |branch part|, what arrived through the next sublayer's branch\n%s\n",
                position_table(s, L, &StreamRun::branch, 2 * L).to_text().c_str());
    std::printf("backward: |branch part| / |skip part|\n%s\n", position_table(s, L, &StreamRun::ratio, 2 * L).to_text().c_str());
    std::fflush(stdout);
  }
  double worst = 0.0;
  const Table summary = summary_table(s, &worst);
  std::printf("summary (top = the last block's output; emb = block 0's input)\n%s", summary.to_text().c_str());
  std::printf("  br/skip mean:   |branch part| / |skip part| averaged over the 2L positions\n"
              "  skip vs next: max over positions k of ||skip part at k - gradient at k+1|| / ||gradient at "
              "k+1||\n"
              "                (0: the skip path hands back the gradient of the sublayer's output unchanged)\n"
              "  max|sk+br-g|: largest |skip + branch - gradient| over every element, position and seed\n");
  std::printf("check: skip + branch = gradient at every position, largest difference %s\n\n", fmt(worst, 3).c_str());
  summary.write_csv(out / "stream_summary.csv");

  for (std::size_t L : s.depths) {  // the plots: per depth, every placement on one plot; per placement, the split
    const std::string xlabel = "stream position k (0 = emb, 2l+1 = block l mid, 2l+2 = block l out)";
    const std::string tag = "L" + std::to_string(L), at_L = ", L = " + std::to_string(L);
    Plot rms{"residual-stream RMS" + at_L, xlabel, "mean per-position RMS", false, true, {}};
    Plot grad{"|dL/dx| at each stream position" + at_L, xlabel, "Frobenius norm", false, true, {}};
    Plot ratio{"|branch part| / |skip part| of the gradient" + at_L, xlabel, "ratio", false, true, {}};
    for (std::size_t i = 0; i < s.placements().size(); ++i) {
      const Runs r = s.at(L, i);
      const std::string& p = s.placements()[i];
      rms.series.push_back(series_of(p, r, &StreamRun::rms, 2 * L + 1));
      grad.series.push_back(series_of(p, r, &StreamRun::total, 2 * L + 1));
      ratio.series.push_back(series_of(p, r, &StreamRun::ratio, 2 * L));
      Plot split{p + ": the gradient at each stream position and its two parts" + at_L, xlabel, "Frobenius norm",
                 false, true, {}};
      split.series.push_back(series_of("total", r, &StreamRun::total, 2 * L + 1));
      split.series.push_back(series_of("skip part", r, &StreamRun::skip, 2 * L));
      split.series.push_back(series_of("branch part", r, &StreamRun::branch, 2 * L));
      draw_log(split, out, "split_" + file_part(p) + "_" + tag);
    }
    draw_log(rms, out, "stream_rms_" + tag);
    draw_log(grad, out, "grad_" + tag);
    draw_log(ratio, out, "grad_ratio_" + tag);
  }
  std::printf("wrote %s: stream_forward.csv, stream_backward.csv, stream_summary.csv; plots (PNG, SVG) "
              "stream_rms_L*, grad_L*, grad_ratio_L*, split_<placement>_L*\n",
              out.string().c_str());
}

// One seed's order-2 Markov corpus over `vocab` tokens, long enough for `steps` training batches.
nn::Dataset seed_corpus(std::size_t vocab, std::size_t B, std::size_t T, std::size_t steps, unsigned seed) {
  nn::CorpusOptions markov;
  markov.concentration = 0.1;  // nn::MarkovOptions' peakedness, not the grids' 0.05
  markov.train_tokens = std::max<std::size_t>(steps * B * (T + 1), 4 * B * (T + 1)) + 1024;
  markov.validation_tokens = 4 * B * (T + 1) + 1024;
  return nn::build_corpus(markov, vocab, seed, T).data;
}

// --html: a recorder of the first seed's training steps, with the measured pass (as step `steps`)
// always a snapshot.
std::unique_ptr<explorer::RunRecorder> pass_recorder(Experiment& ex, const std::string& name, nn::TransformerLM& model,
                                                     std::size_t steps) {
  explorer::RecorderOptions ro = ex.html.recorder();
  ro.snapshot_steps.push_back(steps);
  sort_unique(ro.snapshot_steps);
  return std::make_unique<explorer::RunRecorder>(name, model, ro);
}

// The pass measure() made, again on a tape of its own, recorded for the page.
explorer::Run record_measured_pass(explorer::RunRecorder& rec, nn::TransformerLM& model, const nn::Batch& batch,
                                   std::size_t steps, const std::string& name) {
  Tape tape;
  TapeScope scope(tape);
  tape.keep_contributions = true;
  const double loss = nn::forward_backward(model, batch);
  rec.record_pass(steps, tape, loss);
  rec.run().facts = {{"program", "stream"}, {"run", name},
                     {"what", steps ? "Adam steps 0.." + std::to_string(steps - 1) + ", then the measured pass (step " +
                                          std::to_string(steps) + ")"
                                    : "the measured pass at initialization (step 0)"}};
  return rec.take();
}

// The depths and placements measured (--layers / --placement pick a single one), refused before any
// work if their largest model, trained `steps` steps, cannot fit in memory.
void select_scan(Experiment& ex, std::vector<std::size_t>& depths, std::size_t steps) {
  const ModelOptions& mo = ex.model;
  ex.select_depths_and_placements(depths);
  const std::size_t B = mo.batch, T = mo.seq;
  nn::ModelConfig largest = mo.config();
  largest.layers = depths.back();
  ex.check_memory(largest, steps ? 2 : 0, true, depths.size() * ex.placements.size() * ex.seeds,
                  8.0 * static_cast<double>(ex.seeds) * static_cast<double>(std::max(steps, std::size_t{4}) * B * (T + 1)));
}

// What is measured, printed before the run.
void print_header(const Experiment& ex, std::size_t steps, double lr, std::size_t warmup) {
  const ModelOptions& mo = ex.model;
  const std::size_t B = mo.batch, T = mo.seq;
  std::printf("stream: the residual stream of a TransformerLM, forward and backward\n");
  std::printf("model: vocab %zu, d_model %zu, heads %zu, d_ff %zu, init %s; batch B=%zu, T=%zu%s\n", mo.vocab,
              mo.d_model, mo.heads, mo.config().ff(), mo.init.c_str(), B, T, mo.qk_note().c_str());
  std::printf("measured %s, on one batch of an order-2 Markov corpus per seed; %zu seeds (%u..%u), mean ± std\n",
              steps ? ("after " + std::to_string(steps) + " Adam steps (lr " + fmt(lr) + ", warmup " +
                       std::to_string(warmup) + ")").c_str()
                    : "at initialization",
              ex.seeds, mo.seed, mo.seed + static_cast<unsigned>(ex.seeds) - 1);
  std::printf("positions: emb = the input of block 0; blocks.l.mid = after block l's attention sublayer;\n"
              "           blocks.l.out = after its MLP sublayer = the input of block l+1\n\n");
}

}  // namespace

int main(int argc, char** argv) {
  const auto program_start = std::chrono::steady_clock::now();
  Experiment ex("stream", "stream: the residual stream's norm after every sublayer, and the gradient at every "
                "stream position split into its skip and branch parts, per placement and depth.", "out/stream");
  std::vector<std::size_t> depths = {4, 12};
  std::size_t steps = 0, warmup = 0;  // Adam steps before measuring; 0: measure at initialization
  double lr = 1e-3;
  add_flag(ex.app, "--layers-list", depths, "depths to measure, e.g. 4,12 (instead of --layers)", Whole{1});
  add_flag(ex.app, "--steps", steps, "Adam(0.9, 0.98) steps to train before measuring",
           Whole{0, Whole::no_max, "0: measure at initialization"});
  add_flag(ex.app, "--lr", lr, "learning rate of those steps", RealRange::above(0));
  add_flag(ex.app, "--warmup", warmup, "linear warmup steps of those steps", Whole{0});
  describe(ex.app, "--placements", "placements to compare, e.g. post,pre (instead of --placement)");
  describe(ex.app, "--dump", "write the first seed's model of each placement and depth (after --steps) with its "
                             "gradients on one fresh batch to DIR/<placement>-L<depth>/");
  ex.dump_at_init = false;  // stream dumps its own models, below
  return ex.main(argc, argv, [&] {
    const ModelOptions& mo = ex.model;
    select_scan(ex, depths, steps);
    const std::size_t B = mo.batch, T = mo.seq;
    print_header(ex, steps, lr, warmup);

    std::vector<nn::Dataset> data;  // per seed: the corpus, and the batch measured on
    std::vector<nn::Batch> batches;
    if (ex.merge.empty())
      for (unsigned seed : ex.seed_list()) {
        data.push_back(seed_corpus(mo.vocab, B, T, steps, seed));
        std::mt19937_64 rng(seed);
        batches.push_back(data.back().batch(nn::Split::validation, B, T, rng));
      }
    Grid grid;
    grid.axis("layers", labels(depths)).axis("placement", ex.placements).axis("seed", labels(ex.seed_list()));
    const auto runs = run_cells<StreamRun>(
        ex, grid, "layers", [&](const Cell& c) { return depths[c["layers"]] * (1 + steps); },
        [&](const Cell& c, Tick&) {
          ModelOptions o = ex.cell_model(c);
          nn::TransformerLM model(o.config());
          const nn::Dataset& corpus = data[c["seed"]];
          // --html: the first seed's training steps, and the measured pass as step `steps`, always a snapshot
          std::unique_ptr<explorer::RunRecorder> rec;
          if (ex.html_wanted() && c["seed"] == 0) rec = pass_recorder(ex, grid.describe(c.index), model, steps);
          const nn::StepSetup setup{&corpus, B, T, o.seed, {nn::ScheduleKind::warmup, lr, warmup, steps}, 0.0,
                                    step_hooks(model, rec.get())};
          if (steps) train(model, corpus, setup, steps);
          StreamRun r = measure(model, batches[c["seed"]]);
          if (!ex.dump.empty() && c["seed"] == 0)
            dump_model((std::filesystem::path(ex.dump) / (file_part(o.placement) + "-L" + std::to_string(o.layers))).string(), model,
                       nn::dump_batch(nn::dump_corpus(o.vocab, B, T, o.seed), B, T, o.seed));
          if (rec) ex.add_run(c.index, record_measured_pass(*rec, model, batches[c["seed"]], steps, grid.describe(c.index)));
          return r;
        });
    const double measure_seconds = seconds_since(program_start);
    if (!runs) return;
    report(Scan{{*runs, grid}, depths}, ex.out);
    std::printf("time: measuring %.1f s, total %.1f s\n", measure_seconds, seconds_since(program_start));
  });
}
