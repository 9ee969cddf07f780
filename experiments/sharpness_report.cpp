#include "experiments/sharpness_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "experiments/lib/report.hpp"
#include "experiments/lib/training.hpp"
#include "nn/schedule.hpp"
#include "analysis/eigen.hpp"

namespace gs::experiments {

using namespace gs::analysis;

namespace {

// ---- reporting ----

std::string lr_text(double lr) { return fmt(lr, 3); }

// One view of the curvature: "H" with threshold 2, or "P" with 38.
struct View {
  char key;
  std::string name, lambda;
  double threshold;
};

// A run's lambdas of one scope and view, one per measured step up to where it blew up.
const std::vector<double>& lambdas(const SharpnessRun& r, char view, std::size_t scope) {
  return view == 'H' ? r.H.at(scope) : r.P.at(scope);
}

// lr_s * lambda at the steps of lambdas(r, view, scope).
std::vector<double> scaled(const SharpnessRun& r, char view, std::size_t scope) {
  std::vector<double> out;
  const std::vector<double>& l = lambdas(r, view, scope);
  for (std::size_t i = 0; i < l.size(); ++i) out.push_back(r.lr[i] * l[i]);
  return out;
}

// The last of a run's values, NaN unless the run got to its last measured step.
double last_or_nan(const SharpnessRun& r, const std::vector<double>& v) {
  return v.size() == r.steps.size() && r.blew_up == 0 ? v.back() : NAN;
}
double first_or_nan(const std::vector<double>& v) { return v.empty() ? NAN : v.front(); }
double max_or_nan(const std::vector<double>& v) { return v.empty() ? NAN : *std::max_element(v.begin(), v.end()); }

// Every run, and the grid of its cells: axes placement, warmup, lr, seed.
struct Cells : GridRuns<SharpnessRun> {
  const SharpnessOptions& go;
  std::vector<const SharpnessRun*> at(std::size_t p, std::size_t w, std::size_t l) const { return seeds({p, w, l}); }
  const std::vector<std::string>& placements() const { return grid.labels(0); }
};

// A row per (placement, warmup, lr) for the whole model in one view: at init, the largest over the
// run, at the last measured step (NaN if the run blew up), the first step above the threshold and the
// fraction of measured steps above it; per seed where they are not averaged.
Table view_table(const Cells& g, const View& v) {
  Table t({"placement", "warmup", "lr", v.lambda + " init", "lr*l init", v.lambda + " max", "lr*l max", "lr*l last",
           "first step > " + fmt(v.threshold), "fraction above", "verdict"});
  for (std::size_t p = 0; p < g.placements().size(); ++p)
    for (std::size_t w = 0; w < g.go.warmups.size(); ++w)
      for (std::size_t lr = 0; lr < g.go.lrs.size(); ++lr) {
        std::vector<double> init, scaled_init, top, scaled_top, scaled_last, above;
        std::string first;
        std::vector<Verdict> verdicts;
        std::size_t nan_at = 0;
        for (const SharpnessRun* r : g.at(p, w, lr)) {
          const std::vector<double>& l = lambdas(*r, v.key, 0);
          const std::vector<double> x = scaled(*r, v.key, 0);
          init.push_back(first_or_nan(l));
          scaled_init.push_back(first_or_nan(x));
          top.push_back(max_or_nan(l));
          scaled_top.push_back(max_or_nan(x));
          scaled_last.push_back(last_or_nan(*r, x));
          std::size_t n_above = 0;
          std::string crossed = "-";
          for (std::size_t i = 0; i < l.size(); ++i)
            if (x[i] > v.threshold && n_above++ == 0) crossed = std::to_string(static_cast<std::size_t>(r->steps[i]));
          above.push_back(static_cast<double>(n_above) / static_cast<double>(l.size()));
          first += (first.empty() ? "" : "/") + crossed;
          verdicts.push_back(r->verdict);
          if (r->blew_up && (nan_at == 0 || r->blew_up < nan_at)) nan_at = r->blew_up;
        }
        t.add_row({g.placements()[p], std::to_string(g.go.warmups[w]), lr_text(g.go.lrs[lr]), fmt(stat_of(init), 3),
                   fmt(stat_of(scaled_init), 3), fmt(stat_of(top), 3), fmt(stat_of(scaled_top), 3),
                   fmt(stat_of(scaled_last), 3), first, fmt(stat_of(above), 2), verdict_text(verdicts, nan_at)});
      }
  return t;
}

// Per block: lambda_H at init (it does not depend on lr or warmup), then for each (warmup, lr) the
// largest lr_s * lambda over the run in both views, "SGD view / Adam view", means over seeds.
Table block_table(const Cells& g, std::size_t blocks) {
  std::vector<std::string> columns = {"placement", "warmup", "lr"};
  for (std::size_t b = 0; b < blocks; ++b) columns.push_back("block " + std::to_string(b));
  Table t(columns);
  for (std::size_t p = 0; p < g.placements().size(); ++p) {
    std::vector<std::string> row = {g.placements()[p], "init", "lambda_H"};
    for (std::size_t b = 0; b < blocks; ++b) {
      std::vector<double> v;
      for (const SharpnessRun* r : g.at(p, 0, 0)) v.push_back(first_or_nan(r->H[b + 1]));
      row.push_back(fmt(stat_of(v), 3));
    }
    t.add_row(row);
    for (std::size_t w = 0; w < g.go.warmups.size(); ++w)
      for (std::size_t lr = 0; lr < g.go.lrs.size(); ++lr) {
        row = {g.placements()[p], std::to_string(g.go.warmups[w]), lr_text(g.go.lrs[lr])};
        for (std::size_t b = 0; b < blocks; ++b) {
          std::vector<double> sgd, adam;
          for (const SharpnessRun* r : g.at(p, w, lr)) {
            sgd.push_back(max_or_nan(scaled(*r, 'H', b + 1)));
            adam.push_back(max_or_nan(scaled(*r, 'P', b + 1)));
          }
          row.push_back(fmt(stat_of(sgd).mean, 3) + " / " + fmt(stat_of(adam).mean, 3));
        }
        t.add_row(row);
      }
  }
  return t;
}

// How many lambda values met the Lanczos tolerance, of how many, and the largest residual.
struct Convergence {
  std::size_t estimates = 0, unconverged = 0;
  double worst = 0.0;
  void add(double residual, double tolerance) {
    if (std::isnan(residual)) return;
    ++estimates;
    if (!(residual <= tolerance)) ++unconverged;
    worst = std::max(worst, residual);
  }
};

double at_or_nan(const std::vector<double>& v, std::size_t k) { return k < v.size() ? v[k] : NAN; }

// One row per run x measured step x scope: what sharpness.csv holds.
Table rows_table(const Cells& g, const std::vector<CurvatureScope>& scopes, const std::vector<unsigned>& seeds,
                 Convergence& convergence) {
  Table t({"placement", "warmup", "lr", "seed", "step", "lr_at_step", "scope", "loss", "lambda_H", "lr_lambda_H",
           "above_2", "residual_H", "lambda_P", "lr_lambda_P", "above_38", "residual_P", "verdict"});
  for (std::size_t i = 0; i < g.grid.size(); ++i) {
    const Cell c{&g.grid, i};
    const SharpnessRun& r = g.runs[i];
    for (std::size_t k = 0; k < r.steps.size(); ++k)
      for (std::size_t j = 0; j < scopes.size(); ++j) {
        const double lr = r.lr[k], lh = at_or_nan(r.H[j], k), lp = at_or_nan(r.P[j], k);
        const double rh = at_or_nan(r.H_res[j], k), rp = at_or_nan(r.P_res[j], k);
        convergence.add(rh, g.go.lanczos.tolerance);
        convergence.add(rp, g.go.lanczos.tolerance);
        t.add_row({g.placements()[c["placement"]], std::to_string(g.go.warmups[c["warmup"]]), lr_text(g.go.lrs[c["lr"]]),
                   std::to_string(seeds[c["seed"]]), std::to_string(static_cast<std::size_t>(r.steps[k])), fmt(lr, 6),
                   scopes[j].name, fmt(r.loss[k], 6), fmt(lh, 6), fmt(lr * lh, 6), lr * lh > 2 ? "1" : "0",
                   fmt(rh, 3), fmt(lp, 6), fmt(lr * lp, 6), lr * lp > adam_threshold(adam_beta1) ? "1" : "0",
                   fmt(rp, 3), to_string(r.verdict)});
      }
  }
  return t;
}

// The mean over seeds of lambda_max of the model (over > 0: of over / lr_s instead) at each measured step
// (the curve ends where a seed's does).
Series mean_curve(const std::vector<const SharpnessRun*>& runs, char view, std::string title, double over = 0.0) {
  Series s{std::move(title), {}, {}, {}};
  const std::vector<double>& steps = runs[0]->steps;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    double sum = 0.0;
    for (const SharpnessRun* r : runs) sum += over > 0 ? over / at_or_nan(r->lr, k) : at_or_nan(lambdas(*r, view, 0), k);
    const double mean = sum / static_cast<double>(runs.size());
    if (!std::isfinite(mean)) break;
    s.x.push_back(steps[k]);
    s.y.push_back(mean);
  }
  return s;
}

// Per (placement, lr) and view: lambda_max of the whole model against the step, beside threshold / lr_s.
void draw_lambdas(const Cells& g, const std::filesystem::path& dir) {
  for (const View& v : {View{'H', "lambda_max(H)", "", sgd_threshold}, View{'P', "lambda_max(P^-1/2 H P^-1/2)", "", adam_threshold(adam_beta1)}}) {
    const std::string ylabel = v.name + ", mean over seeds (log scale)";
    for (std::size_t p = 0; p < g.placements().size(); ++p)
      for (std::size_t lr = 0; lr < g.go.lrs.size(); ++lr) {
        const std::string& placement = g.placements()[p];
        Plot plot{placement + ", lr " + lr_text(g.go.lrs[lr]) + ": " + v.name + ", whole model, vs " + fmt(v.threshold) + " / lr_s",
                  "step", ylabel, false, true, {}};
        for (std::size_t w = 0; w < g.go.warmups.size(); ++w) {
          const std::string warmup = ", warmup " + std::to_string(g.go.warmups[w]);
          plot.series.push_back(mean_curve(g.at(p, w, lr), v.key, v.name + warmup));
          plot.series.push_back(mean_curve(g.at(p, w, lr), v.key, fmt(v.threshold) + " / lr_s" + warmup, v.threshold));
        }
        drop_nonpositive(plot.series);
        draw(plot, dir, (v.key == 'H' ? "lambda_" : "adam_") + file_part(placement) + "_lr" + lr_text(g.go.lrs[lr]));
      }
  }
}

void draw_schedules(const SharpnessOptions& go, const std::filesystem::path& dir) {
  Plot rates{"learning rate lr_s of the step taken from step s", "step", "lr (log scale)", false, true, {}};
  for (double lr : go.lrs)
    for (std::size_t w : go.warmups) {
      const nn::Schedule schedule{nn::ScheduleKind::warmup, lr, w, go.steps, 0.1};
      Series s{"lr " + lr_text(lr) + ", warmup " + std::to_string(w), {}, {}, {}};
      for (std::size_t k = 0; k <= go.steps; ++k) {
        s.x.push_back(static_cast<double>(k));
        s.y.push_back(schedule.lr(k));
      }
      rates.series.push_back(s);
    }
  draw(rates, dir, "lr_schedule");
}

// lambda_max(H) of each block (mean over the seeds), at init or at the last measured step.
Series per_block(const std::vector<const SharpnessRun*>& runs, std::size_t blocks, bool last, std::string title) {
  Series s{std::move(title), {}, {}, {}};
  for (std::size_t b = 0; b < blocks; ++b) {
    std::vector<double> v;
    for (const SharpnessRun* r : runs) v.push_back(last ? last_or_nan(*r, r->H[b + 1]) : first_or_nan(r->H[b + 1]));
    const double mean = stat_of(v).mean;
    if (!std::isfinite(mean)) continue;
    s.x.push_back(static_cast<double>(b));
    s.y.push_back(mean);
  }
  return s;
}

void draw_blocks(const Cells& g, std::size_t blocks, const std::filesystem::path& dir) {
  for (std::size_t p = 0; p < g.placements().size(); ++p) {
    Plot plot{g.placements()[p] + ": lambda_max(H) per block, at init and at the last step", "block",
              "lambda_max(H), mean over seeds (log scale)", false, true, {}};
    plot.series.push_back(per_block(g.at(p, 0, 0), blocks, false, "init"));
    for (std::size_t w = 0; w < g.go.warmups.size(); ++w)
      for (std::size_t lr = 0; lr < g.go.lrs.size(); ++lr) {
        std::string title = "step ";
        title += std::to_string(measured_steps(g.go).back());
        title += ", lr " + lr_text(g.go.lrs[lr]) + ", warmup " + std::to_string(g.go.warmups[w]);
        plot.series.push_back(per_block(g.at(p, w, lr), blocks, true, title));
      }
    drop_nonpositive(plot.series);
    draw(plot, dir, "blocks_" + file_part(g.placements()[p]));
  }
}

}  // namespace

void report_sharpness(const std::vector<SharpnessRun>& runs, const Grid& grid, const SharpnessOptions& go,
                      const std::vector<CurvatureScope>& scopes, const std::vector<unsigned>& seeds,
                      const std::filesystem::path& dir) {
  const Cells g{{runs, grid}, go};
  const View sgd{'H', "SGD view", "lambda_H", sgd_threshold}, adam{'P', "Adam view", "lambda_P", adam_threshold(adam_beta1)};
  const Table ts = view_table(g, sgd), ta = view_table(g, adam), tb = block_table(g, scopes.size() - 1);
  std::printf("\nwhole model, SGD view: lambda_max(H) and lr_s * lambda_max(H) against 2 (means over seeds; first step "
              "and verdict per seed, '-': never above):\n\n%s",
              ts.to_text().c_str());
  std::printf("\nwhole model, Adam view: lambda_max(P^-1/2 H P^-1/2) and lr_s * lambda_P against %s (step 0: P of the "
              "first update, at the initial parameters):\n\n%s",
              fmt(adam.threshold).c_str(), ta.to_text().c_str());
  std::printf("\nper block: lambda_max(H) at init, then the largest lr_s * lambda over the run, SGD view (vs 2) / Adam view "
              "(vs %s), means over seeds:\n\n%s",
              fmt(adam.threshold).c_str(), tb.to_text().c_str());
  Convergence c;
  const Table rows = rows_table(g, scopes, seeds, c);
  std::printf("\nLanczos: %zu of the %zu lambda values in sharpness.csv met the tolerance %s within %zu products (step "
              "0's are shared by the lrs and warmups of a placement and seed); the largest residual "
              "|A y - lambda y| / |lambda| was %s\n",
              c.estimates - c.unconverged, c.estimates, fmt(g.go.lanczos.tolerance).c_str(), g.go.lanczos.max_iterations,
              fmt(c.worst, 3).c_str());
  rows.write_csv(dir / "sharpness.csv");
  ts.write_csv(dir / "summary_sgd.csv");
  ta.write_csv(dir / "summary_adam.csv");
  tb.write_csv(dir / "blocks.csv");
  draw_lambdas(g, dir);
  draw_schedules(g.go, dir);
  draw_blocks(g, scopes.size() - 1, dir);
  std::printf("\nwrote %s: sharpness.csv (a row per run x measured step x scope), summary_sgd.csv, summary_adam.csv, "
              "blocks.csv; lambda_<placement>_lr<lr>, adam_<placement>_lr<lr>, blocks_<placement>, lr_schedule (.png, .svg)\n",
              dir.string().c_str());
}

}  // namespace gs::experiments
