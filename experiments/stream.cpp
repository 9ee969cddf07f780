// stream: the residual stream of a TransformerLM, forward and backward, per placement and depth.
//
//   build/bin/stream                                   defaults: L in {4, 12}, all five placements, 3 seeds
//   build/bin/stream --layers-list 2,8,24 --placements post,pre --seeds 5
//   build/bin/stream --steps 300 --lr 1e-3 --warmup 100   the same after 300 Adam steps instead of at init
//
// Forward: the size of the residual stream at every position between sublayers -- emb, then each
// block's mid (after attention) and output (after the MLP) -- as the per-position RMS
// sqrt(mean_c x^2) averaged over the B x T positions, and the per-position L2 norm sqrt(sum_c x^2)
// averaged the same way (= sqrt(d) x the RMS; in the CSV).
//
// Backward: d(mean loss)/d(stream) at every position that a sublayer reads, split by the path it came
// back through (experiments/common/stream_split.hpp): the identity part is what the sublayer's skip
// op sent (the residual add, or deepnorm's alpha * x), the branch part what every other reader sent
// (the sublayer itself, or the LayerNorm in front of it). Both are read from the tape's recorded
// contributions (Tape::keep_contributions), so identity + branch is the gradient; the program checks
// that and prints the largest difference. Gradient norms are Frobenius norms over the whole (B, T, d)
// tensor, of the gradient of the mean cross-entropy over one batch of a Markov corpus.
//
// Output: tables on the terminal; in --out, stream_forward.csv, stream_backward.csv (every position,
// mean and std over seeds), stream_summary.csv, and plots per depth L: stream_rms_L*, grad_L*,
// grad_ratio_L* (every placement) and split_<placement>_L* (total, identity and branch parts).
// --dump DIR writes DIR/<placement>-L<depth>/ (nn/io/dump.hpp) for the first seed's model of each.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "experiments/common/graph.hpp"
#include "experiments/common/options.hpp"
#include "experiments/common/probe.hpp"
#include "experiments/common/report.hpp"
#include "experiments/common/run.hpp"
#include "experiments/common/stream_split.hpp"
#include "nn/data/markov.hpp"
#include "nn/optim.hpp"
#include "nn/schedule.hpp"
#include "nn/transformer_lm.hpp"

using namespace gs;
using namespace gs::experiments;
using Clock = std::chrono::steady_clock;

namespace {

struct StreamOptions {
  std::vector<std::size_t> depths = {4, 12};
  std::vector<std::string> placements = {"post", "pre", "peri", "deepnorm", "rezero"};
  std::size_t steps = 0;       // Adam steps before measuring; 0: measure at initialization
  double lr = 1e-3;
  std::size_t warmup = 0;
};

// What one model (one placement, depth and seed) gives. Positions k = 0 .. 2L as in stream_split.hpp.
struct Measured {
  double loss = 0.0;
  std::vector<double> rms, l2;       // forward, at every position 0 .. 2L
  std::vector<double> total;         // |gradient| at every position 0 .. 2L
  std::vector<double> identity, branch, ratio;  // at the positions a sublayer reads, 0 .. 2L-1
  std::vector<double> skip_vs_next;  // ||identity_k - gradient_{k+1}|| / ||gradient_{k+1}||, k < 2L
  double check = 0.0;                // max over positions and elements of |identity + branch - gradient|
};

// One forward and backward pass on `batch` with the tape keeping every contribution.
Measured measure(nn::TransformerLM& model, const nn::Batch& batch) {
  Tape tape;
  TapeScope scope(tape);
  tape.keep_contributions = true;
  model.zero_grad();
  Measured m;
  const Var loss = model.loss(batch.inputs, batch.targets);
  m.loss = loss.value()();
  loss.backward();
  const std::vector<StreamPosition> positions = stream_positions(model);
  for (std::size_t k = 0; k < positions.size(); ++k) {
    const StreamPosition& p = positions[k];
    m.rms.push_back(mean_rms(p.value.value()));
    m.l2.push_back(mean_l2(p.value.value()));
    m.total.push_back(norm(p.value.grad()));
    if (p.top) continue;  // read by ln_f or the head, no skip path
    const PathSplit s = split_gradient(p.value);
    m.identity.push_back(norm(s.identity));
    m.branch.push_back(norm(s.branch));
    m.ratio.push_back(norm(s.branch) / norm(s.identity));
    m.check = std::max(m.check, max_abs_diff(s.identity + s.branch, s.total));
    const Array& next = positions[k + 1].value.grad();
    m.skip_vs_next.push_back(gs::norm(Array(s.identity - next)) / gs::norm(next));
  }
  return m;
}

// `steps` Adam(0.9, 0.98) updates with linear warmup, on batches of the training split.
void train(nn::TransformerLM& model, const nn::Dataset& data, const StreamOptions& o, std::size_t B,
           std::size_t T, unsigned seed) {
  Tape tape;
  TapeScope scope(tape);
  nn::AdamOptions adam_options;
  adam_options.beta2 = 0.98;
  nn::Adam adam(model.named_parameters(), adam_options);
  const nn::Schedule schedule{nn::ScheduleKind::warmup, o.lr, o.warmup, o.steps};
  std::mt19937_64 rng(seed + 7919u);
  for (std::size_t step = 0; step < o.steps; ++step) {
    tape.reset();
    adam.zero_grad();
    const nn::Batch b = data.batch(nn::Split::train, B, T, rng);
    const Var loss = model.loss(b.inputs, b.targets);
    if (!std::isfinite(loss.value()()))
      throw Error(nn::placement_name(model.config) + " L=" + std::to_string(model.config.layers) + " seed " +
                  std::to_string(seed) + ": the loss is " + std::to_string(loss.value()()) + " at step " +
                  std::to_string(step));
    loss.backward();
    adam.step(schedule.lr(step));
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

using Runs = std::vector<Measured>;  // one per seed

// The statistic over seeds of field(run)[k].
Stat at(const Runs& runs, std::vector<double> Measured::*field, std::size_t k) {
  std::vector<double> v;
  for (const Measured& m : runs) v.push_back((m.*field).at(k));
  return stat_of(v);
}
template <class F>
Stat over(const Runs& runs, F f) {
  std::vector<double> v;
  for (const Measured& m : runs) v.push_back(f(m));
  return stat_of(v);
}

// A table with one row per position and one column per placement.
Table position_table(const std::vector<std::string>& placements, const std::map<std::string, Runs>& runs,
                     std::vector<double> Measured::*field, std::size_t positions, std::size_t L) {
  std::vector<std::string> columns{"position"};
  for (const std::string& p : placements) columns.push_back(p);
  Table table(columns);
  const std::vector<std::string> names = position_names(L);
  for (std::size_t k = 0; k < positions; ++k) {
    std::vector<std::string> row{names[k]};
    for (const std::string& p : placements) row.push_back(fmt(at(runs.at(p), field, k)));
    table.add_row(row);
  }
  return table;
}

// For a log-scale plot: drops series that are not all positive, noting them in the title.
Plot for_log_scale(Plot plot) {
  std::vector<Series> kept;
  std::string dropped;
  for (Series& s : plot.series) {
    bool positive = !s.y.empty();
    bool zero = true;
    for (double y : s.y) {
      positive = positive && y > 0.0;
      zero = zero && y == 0.0;
    }
    if (positive) {
      kept.push_back(std::move(s));
    } else {
      if (!dropped.empty()) dropped += ", ";
      dropped += s.title;
      dropped += zero ? " (exactly 0)" : " (not all > 0)";
    }
  }
  plot.series = std::move(kept);
  if (!dropped.empty()) {
    plot.title += "; not drawn on the log scale: ";
    plot.title += dropped;
  }
  return plot;
}

Series series_of(const std::string& title, const Runs& runs, std::vector<double> Measured::*field, std::size_t n) {
  Series s;
  s.title = title;
  for (std::size_t k = 0; k < n; ++k) {
    const Stat st = at(runs, field, k);
    s.x.push_back(static_cast<double>(k));
    s.y.push_back(st.mean);
    s.err.push_back(st.std);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const auto program_start = Clock::now();
  setup_process();

  CLI::App app{"stream: the residual stream's norm after every sublayer, and the gradient at every stream "
               "position split into its identity (skip) and branch parts, per placement and depth."};
  ModelOptions model_options;  // vocab 64, d 64, 4 heads, T 32, B 16
  add_model_options(app, model_options);
  RunOptions run_options;
  run_options.out = "out/stream";
  add_run_options(app, run_options);
  StreamOptions o;
  app.add_option("--layers-list", o.depths, "depths to measure, e.g. 4,12 (instead of --layers)")
      ->delimiter(',')
      ->check(experiments::positive)
      ->capture_default_str();
  app.add_option("--placements", o.placements, "placements to compare, e.g. post,pre (instead of --placement)")
      ->delimiter(',')
      ->check(CLI::IsMember({"post", "pre", "peri", "sandwich", "deepnorm", "rezero"}))
      ->capture_default_str();
  app.add_option("--steps", o.steps, "Adam(0.9, 0.98) steps to train before measuring (0: at initialization)")
      ->capture_default_str();
  app.add_option("--lr", o.lr, "learning rate of those steps")->capture_default_str();
  app.add_option("--warmup", o.warmup, "linear warmup steps of those steps")->capture_default_str();
  std::string graph;
  add_graph_option(app, graph);
  finish_cli(app);
  CLI11_PARSE(app, argc, argv);

  try {
    if (!graph.empty()) {  // --graph: one forward and backward pass drawn, instead of the run
      write_model_graph(graph, model_options);
      return 0;
    }
    // --layers / --placement (the shared model flags) pick a single depth / placement.
    if (app.get_option("--layers")->count()) {
      if (app.get_option("--layers-list")->count()) throw Error("give --layers or --layers-list, not both");
      o.depths = {model_options.layers};
    }
    if (app.get_option("--placement")->count()) {
      if (app.get_option("--placements")->count()) throw Error("give --placement or --placements, not both");
      o.placements = {model_options.placement};
    }
    for (std::string& p : o.placements) {  // "sandwich" -> "peri"
      nn::ModelConfig c;
      nn::apply_placement(c, p);
      p = nn::placement_name(c);
    }
    auto dedupe = [](auto& v) {  // keeps the first of each, in order
      for (std::size_t i = 0; i < v.size(); ++i)
        for (std::size_t j = v.size(); j-- > i + 1;)
          if (v[j] == v[i]) v.erase(v.begin() + static_cast<std::ptrdiff_t>(j));
    };
    dedupe(o.placements);
    dedupe(o.depths);
    const std::size_t B = model_options.batch, T = model_options.seq;
    const unsigned seed0 = model_options.seed;

    std::printf("stream: the residual stream of a TransformerLM, forward and backward\n");
    std::printf("model: vocab %zu, d_model %zu, heads %zu, d_ff %zu, init %s; batch B=%zu, T=%zu\n",
                model_options.vocab, model_options.d_model, model_options.heads,
                model_options.d_ff ? model_options.d_ff : 4 * model_options.d_model, model_options.init.c_str(), B,
                T);
    std::printf("measured %s, on one batch of an order-2 Markov corpus per seed; %zu seeds (%u..%u), mean ± std\n",
                o.steps ? ("after " + std::to_string(o.steps) + " Adam steps (lr " + fmt(o.lr) + ", warmup " +
                           std::to_string(o.warmup) + ")")
                              .c_str()
                        : "at initialization",
                run_options.seeds, seed0, seed0 + static_cast<unsigned>(run_options.seeds) - 1);
    std::printf("positions: emb = the input of block 0; blocks.l.mid = after block l's attention sublayer;\n"
                "           blocks.l.out = after its MLP sublayer = the input of block l+1\n\n");
    std::fflush(stdout);

    // The measurements: runs[L][placement] = one Measured per seed.
    std::map<std::size_t, std::map<std::string, Runs>> runs;
    std::size_t units = 0;  // the bar counts layers, times the steps each model trains
    for (std::size_t L : o.depths) units += run_options.seeds * o.placements.size() * L * (1 + o.steps);
    StatusLine status("stream", units);
    for (std::size_t s = 0; s < run_options.seeds; ++s) {
      const unsigned seed = seed0 + static_cast<unsigned>(s);
      nn::MarkovOptions mo;
      mo.vocab = model_options.vocab;
      mo.seed = seed;
      const nn::MarkovChain chain(mo);
      const nn::Dataset data =
          nn::markov_dataset(chain, std::max<std::size_t>(o.steps * B * (T + 1), 4 * B * (T + 1)) + 1024,
                             4 * B * (T + 1) + 1024, seed);
      std::mt19937_64 rng(seed);
      const nn::Batch batch = data.batch(nn::Split::validation, B, T, rng);
      for (std::size_t L : o.depths)
        for (const std::string& p : o.placements) {
          ModelOptions mopt = model_options;
          mopt.layers = L;
          mopt.placement = p;
          mopt.seed = seed;
          nn::TransformerLM model(mopt.config());
          if (o.steps) train(model, data, o, B, T, seed);
          runs[L][p].push_back(measure(model, batch));
          status.advance(L * (1 + o.steps), p + " L=" + std::to_string(L) + " seed " + std::to_string(seed));
          if (!run_options.dump.empty() && s == 0) {
            Tape tape;
            TapeScope scope(tape);
            std::string name = p;
            name += "-L";
            name += std::to_string(L);
            dump_model((std::filesystem::path(run_options.dump) / name).string(), model, B, T, seed);
          }
        }
    }
    status.finish();
    const double measure_seconds = seconds_since(program_start);

    // CSV: every position of every run's statistics.
    const std::filesystem::path out = run_options.out;
    std::filesystem::create_directories(out);
    Table forward_csv({"layers", "placement", "k", "position", "rms_mean", "rms_std", "l2_mean", "l2_std"});
    Table backward_csv({"layers", "placement", "k", "position", "grad_mean", "grad_std", "identity_mean",
                        "identity_std", "branch_mean", "branch_std", "ratio_mean", "ratio_std",
                        "skip_vs_next_mean", "skip_vs_next_std"});
    auto cell = [](double x) { return fmt(x, 10); };
    for (const auto& [L, by_placement] : runs) {
      const std::vector<std::string> names = position_names(L);
      for (const std::string& p : o.placements) {
        const Runs& r = by_placement.at(p);
        for (std::size_t k = 0; k <= 2 * L; ++k) {
          const Stat rms = at(r, &Measured::rms, k), l2 = at(r, &Measured::l2, k), g = at(r, &Measured::total, k);
          forward_csv.add_row({std::to_string(L), p, std::to_string(k), names[k], cell(rms.mean), cell(rms.std),
                               cell(l2.mean), cell(l2.std)});
          std::vector<std::string> row{std::to_string(L), p, std::to_string(k), names[k], cell(g.mean), cell(g.std)};
          for (auto field : {&Measured::identity, &Measured::branch, &Measured::ratio, &Measured::skip_vs_next}) {
            if (k < 2 * L) {
              const Stat st = at(r, field, k);
              row.push_back(cell(st.mean));
              row.push_back(cell(st.std));
            } else {  // the top: no skip path reads it
              row.push_back("");
              row.push_back("");
            }
          }
          backward_csv.add_row(row);
        }
      }
    }
    forward_csv.write_csv(out / "stream_forward.csv");
    backward_csv.write_csv(out / "stream_backward.csv");

    // The tables, one set per depth.
    for (const auto& [L, by_placement] : runs) {
      std::printf("==== L = %zu ====\n\n", L);
      std::printf("forward: residual-stream RMS, mean over positions of sqrt(mean_c x^2)\n%s\n",
                  position_table(o.placements, by_placement, &Measured::rms, 2 * L + 1, L).to_text().c_str());
      std::printf("backward: |dL/dx|, the gradient's norm at each stream position\n%s\n",
                  position_table(o.placements, by_placement, &Measured::total, 2 * L + 1, L).to_text().c_str());
      std::printf("backward: |identity part|, what arrived through the next sublayer's skip path\n%s\n",
                  position_table(o.placements, by_placement, &Measured::identity, 2 * L, L).to_text().c_str());
      std::printf("backward: |branch part|, what arrived through the next sublayer's branch\n%s\n",
                  position_table(o.placements, by_placement, &Measured::branch, 2 * L, L).to_text().c_str());
      std::printf("backward: |branch part| / |identity part|\n%s\n",
                  position_table(o.placements, by_placement, &Measured::ratio, 2 * L, L).to_text().c_str());
      std::fflush(stdout);
    }

    // The summary, one row per depth and placement.
    Table summary({"L", "placement", "loss", "RMS emb", "RMS top", "RMS top/emb", "|g| top", "|g| emb",
                   "|g| emb/top", "br/id mean", "skip vs next", "max|id+br-g|"});
    double worst = 0.0;
    for (const auto& [L, by_placement] : runs)
      for (const std::string& p : o.placements) {
        const Runs& r = by_placement.at(p);
        const std::size_t top = 2 * L;
        double check = 0.0;
        for (const Measured& m : r) check = std::max(check, m.check);
        worst = std::max(worst, check);
        summary.add_row({std::to_string(L), p, fmt(over(r, [](const Measured& m) { return m.loss; })),
                         fmt(at(r, &Measured::rms, 0)), fmt(at(r, &Measured::rms, top)),
                         fmt(over(r, [&](const Measured& m) { return m.rms[top] / m.rms[0]; })),
                         fmt(at(r, &Measured::total, top)), fmt(at(r, &Measured::total, 0)),
                         fmt(over(r, [&](const Measured& m) { return m.total[0] / m.total[top]; })),
                         fmt(over(r,
                                  [](const Measured& m) {
                                    double s = 0.0;
                                    for (double x : m.ratio) s += x;
                                    return s / static_cast<double>(m.ratio.size());
                                  })),
                         fmt(over(r,
                                  [](const Measured& m) {
                                    double s = 0.0;
                                    for (double x : m.skip_vs_next) s = std::max(s, x);
                                    return s;
                                  })),
                         fmt(check, 2)});
      }
    std::printf("summary (top = the last block's output; emb = block 0's input)\n%s", summary.to_text().c_str());
    std::printf("  br/id mean:   |branch part| / |identity part| averaged over the 2L positions\n"
                "  skip vs next: max over positions k of ||identity part at k - gradient at k+1|| / ||gradient at "
                "k+1||\n"
                "                (0: the skip path hands back the gradient of the sublayer's output unchanged)\n"
                "  max|id+br-g|: largest |identity + branch - gradient| over every element, position and seed\n");
    std::printf("check: identity + branch = gradient at every position, largest difference %s\n\n",
                fmt(worst, 3).c_str());
    summary.write_csv(out / "stream_summary.csv");

    // The plots: per depth, every placement on one plot; and per placement, the split.
    for (const auto& [L, by_placement] : runs) {
      const std::string xlabel = "stream position k (0 = emb, 2l+1 = block l mid, 2l+2 = block l out)";
      const std::string tag = "L" + std::to_string(L);
      Plot rms{"residual-stream RMS, L = " + std::to_string(L), xlabel, "mean per-position RMS", false, true, {}};
      Plot grad{"|dL/dx| at each stream position, L = " + std::to_string(L), xlabel, "Frobenius norm", false, true,
                {}};
      Plot ratio{"|branch part| / |identity part| of the gradient, L = " + std::to_string(L), xlabel, "ratio",
                 false, true, {}};
      for (const std::string& p : o.placements) {
        const Runs& r = by_placement.at(p);
        rms.series.push_back(series_of(p, r, &Measured::rms, 2 * L + 1));
        grad.series.push_back(series_of(p, r, &Measured::total, 2 * L + 1));
        ratio.series.push_back(series_of(p, r, &Measured::ratio, 2 * L));
        Plot split{p + ": the gradient at each stream position and its two parts, L = " + std::to_string(L), xlabel,
                   "Frobenius norm", false, true, {}};
        split.series.push_back(series_of("total", r, &Measured::total, 2 * L + 1));
        split.series.push_back(series_of("identity (skip) part", r, &Measured::identity, 2 * L));
        split.series.push_back(series_of("branch part", r, &Measured::branch, 2 * L));
        draw(for_log_scale(split), out, "split_" + p + "_" + tag);
      }
      draw(for_log_scale(rms), out, "stream_rms_" + tag);
      draw(for_log_scale(grad), out, "grad_" + tag);
      draw(for_log_scale(ratio), out, "grad_ratio_" + tag);
    }
    std::printf("wrote %s: stream_forward.csv, stream_backward.csv, stream_summary.csv; plots (PNG, SVG) "
                "stream_rms_L*, grad_L*, grad_ratio_L*, split_<placement>_L*\n",
                out.string().c_str());
    std::printf("time: measuring %.1f s, total %.1f s\n", measure_seconds, seconds_since(program_start));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stream: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
