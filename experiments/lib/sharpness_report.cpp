#include "experiments/lib/sharpness_report.hpp"

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

// A record's name for one view and scope: "H0", "P3". (Appended, not "H" + to_string: g++ 12 warns
// falsely, -Wrestrict, on that.)
std::string key(char view, std::size_t scope) {
  std::string k(1, view);
  k += std::to_string(scope);
  return k;
}

Verdict verdict(const Record& r) { return static_cast<Verdict>(static_cast<int>(r.get("verdict"))); }
std::string lr_text(double lr) { return fmt(lr, 3); }

// One view of the curvature: "H" with threshold 2, or "P" with 38.
struct View {
  std::string key, name, lambda;
  double threshold;
};

// A run's lambdas of one scope and view, one per measured step up to where it blew up (lambda_P at
// step 0 is missing when the first step blew up).
const std::vector<double>& lambdas(const Record& r, const std::string& name) {
  static const std::vector<double> none;
  return r.has(name) ? r.list(name) : none;
}

// lr_s * lambda at the steps of lambdas(r, name).
std::vector<double> scaled(const Record& r, const std::string& name) {
  std::vector<double> out;
  const std::vector<double>& l = lambdas(r, name);
  for (std::size_t i = 0; i < l.size(); ++i) out.push_back(r.list("lr")[i] * l[i]);
  return out;
}

double first_or_nan(const std::vector<double>& v) { return v.empty() ? NAN : v.front(); }
double max_or_nan(const std::vector<double>& v) { return v.empty() ? NAN : *std::max_element(v.begin(), v.end()); }

struct Cells {
  const Results& results;
  const std::vector<std::string>& placements;
  const SharpnessOptions& go;
  std::vector<const Record*> at(const std::string& p, std::size_t w, double lr) const {
    return results.where({{"placement", p}, {"warmup", std::to_string(w)}, {"lr", label(lr)}});
  }
};

// A row per (placement, warmup, lr) for the whole model in one view: at init, the largest over the
// run, at the last measured step (NaN if the run blew up), the first step above the threshold and the
// fraction of measured steps above it; per seed where they are not averaged.
Table view_table(const Cells& g, const View& v) {
  Table t({"placement", "warmup", "lr", v.lambda + " init", "lr*l init", v.lambda + " max", "lr*l max", "lr*l last",
           "first step > " + fmt(v.threshold), "fraction above", "verdict"});
  for (const std::string& p : g.placements)
    for (std::size_t w : g.go.warmups)
      for (double lr : g.go.lrs) {
        const auto runs = g.at(p, w, lr);
        std::vector<double> init, scaled_init, top, scaled_top, scaled_last, above;
        std::string first;
        std::vector<Verdict> verdicts;
        std::size_t nan_at = 0;
        for (const Record* r : runs) {
          const std::vector<double>& l = lambdas(*r, v.key + "0");
          const std::vector<double> x = scaled(*r, v.key + "0");
          init.push_back(first_or_nan(l));
          scaled_init.push_back(first_or_nan(x));
          top.push_back(max_or_nan(l));
          scaled_top.push_back(max_or_nan(x));
          scaled_last.push_back(x.size() == r->list("steps").size() && r->get("blew_up") == 0 ? x.back() : NAN);
          std::size_t n_above = 0;
          std::string crossed = "-";
          for (std::size_t i = 0; i < l.size(); ++i)
            if (x[i] > v.threshold) {
              if (n_above++ == 0) crossed = std::to_string(static_cast<std::size_t>(r->list("steps")[i]));
            }
          above.push_back(static_cast<double>(n_above) / static_cast<double>(l.size()));
          first += (first.empty() ? "" : "/") + crossed;
          verdicts.push_back(verdict(*r));
          const auto b = static_cast<std::size_t>(r->get("blew_up"));
          if (b && (nan_at == 0 || b < nan_at)) nan_at = b;
        }
        t.add_row({p, std::to_string(w), lr_text(lr), fmt(stat_of(init), 3), fmt(stat_of(scaled_init), 3),
                   fmt(stat_of(top), 3), fmt(stat_of(scaled_top), 3), fmt(stat_of(scaled_last), 3), first, fmt(stat_of(above), 2),
                   verdict_text(verdicts, nan_at)});
      }
  return t;
}

// Per block: lambda_H at init (it does not depend on lr or warmup), then for each (warmup, lr) the
// largest lr_s * lambda over the run in both views, "SGD view / Adam view", means over seeds.
Table block_table(const Cells& g, std::size_t blocks) {
  std::vector<std::string> columns = {"placement", "warmup", "lr"};
  for (std::size_t b = 0; b < blocks; ++b) columns.push_back("block " + std::to_string(b));
  Table t(columns);
  for (const std::string& p : g.placements) {
    std::vector<std::string> row = {p, "init", "lambda_H"};
    for (std::size_t b = 0; b < blocks; ++b) {
      std::vector<double> v;
      for (const Record* r : g.at(p, g.go.warmups[0], g.go.lrs[0])) v.push_back(first_or_nan(lambdas(*r, key('H', b + 1))));
      row.push_back(fmt(stat_of(v), 3));
    }
    t.add_row(row);
    for (std::size_t w : g.go.warmups)
      for (double lr : g.go.lrs) {
        row = {p, std::to_string(w), lr_text(lr)};
        for (std::size_t b = 0; b < blocks; ++b) {
          std::vector<double> sgd, adam;
          for (const Record* r : g.at(p, w, lr)) {
            sgd.push_back(max_or_nan(scaled(*r, key('H', b + 1))));
            adam.push_back(max_or_nan(scaled(*r, key('P', b + 1))));
          }
          row.push_back(fmt(stat_of(sgd).mean, 3) + " / " + fmt(stat_of(adam).mean, 3));
        }
        t.add_row(row);
      }
  }
  return t;
}

// One row per run x measured step x scope: what sharpness.csv holds.
Table rows_table(const Cells& g, const std::vector<CurvatureScope>& scopes, const std::vector<unsigned>& seeds,
                 double tolerance, std::size_t* estimates, std::size_t* unconverged, double* worst) {
  Table t({"placement", "warmup", "lr", "seed", "step", "lr_at_step", "scope", "loss", "lambda_H", "lr_lambda_H",
           "above_2", "residual_H", "lambda_P", "lr_lambda_P", "above_38", "residual_P", "verdict"});
  for (std::size_t i = 0; i < g.results.grid().size(); ++i) {
    const Cell c{&g.results.grid(), i};
    const Record& r = g.results.at(i);
    const std::vector<double>& steps = r.list("steps");
    for (std::size_t k = 0; k < steps.size(); ++k)
      for (std::size_t j = 0; j < scopes.size(); ++j) {
        const std::string h = key('H', j), p = key('P', j);
        auto value = [&](const std::string& name) {
          return r.has(name) && k < r.list(name).size() ? r.list(name)[k] : NAN;
        };
        const double lr = r.list("lr")[k], lh = value(h), lp = value(p);
        for (const std::string& name : {h, p})
          if (!std::isnan(value(name + ".res"))) {
            ++*estimates;
            if (!(value(name + ".res") <= tolerance)) ++*unconverged;
            *worst = std::max(*worst, value(name + ".res"));
          }
        t.add_row({g.placements[c["placement"]], std::to_string(g.go.warmups[c["warmup"]]), lr_text(g.go.lrs[c["lr"]]),
                   std::to_string(seeds[c["seed"]]), std::to_string(static_cast<std::size_t>(steps[k])), fmt(lr, 6),
                   scopes[j].name, fmt(r.list("loss")[k], 6), fmt(lh, 6), fmt(lr * lh, 6), lr * lh > 2 ? "1" : "0",
                   fmt(value(h + ".res"), 3), fmt(lp, 6), fmt(lr * lp, 6), lr * lp > adam_threshold(adam_beta1) ? "1" : "0",
                   fmt(value(p + ".res"), 3), to_string(verdict(r))});
      }
  }
  return t;
}

// The mean over seeds of one quantity at each measured step (the curve ends where a seed's does).
Series mean_curve(const std::vector<const Record*>& runs, const std::string& name, std::string title, bool times_lr,
                  double over = 0.0) {
  Series s{std::move(title), {}, {}, {}};
  const std::vector<double>& steps = runs[0]->list("steps");
  for (std::size_t k = 0; k < steps.size(); ++k) {
    double sum = 0.0;
    for (const Record* r : runs) {
      const std::vector<double>& l = over > 0 ? r->list("lr") : lambdas(*r, name);
      const double v = k < l.size() ? l[k] : NAN;
      sum += over > 0 ? over / v : times_lr ? v * r->list("lr")[k] : v;
    }
    const double mean = sum / static_cast<double>(runs.size());
    if (!std::isfinite(mean)) break;
    s.x.push_back(steps[k]);
    s.y.push_back(mean);
  }
  return s;
}

void draw_plots(const Cells& g, std::size_t blocks, const std::filesystem::path& dir) {
  const SharpnessOptions& go = g.go;
  for (const View& v : {View{"H", "lambda_max(H)", "", sgd_threshold}, View{"P", "lambda_max(P^-1/2 H P^-1/2)", "", adam_threshold(adam_beta1)}}) {
    const std::string ylabel = v.name + ", mean over seeds (log scale)";
    for (const std::string& p : g.placements)
      for (double lr : go.lrs) {
        Plot plot{p + ", lr " + lr_text(lr) + ": " + v.name + ", whole model, vs " + fmt(v.threshold) + " / lr_s",
                  "step", ylabel, false, true, {}};
        for (std::size_t w : go.warmups) {
          const auto runs = g.at(p, w, lr);
          plot.series.push_back(mean_curve(runs, v.key + "0", v.name + ", warmup " + std::to_string(w), false));
          plot.series.push_back(mean_curve(runs, "", fmt(v.threshold) + " / lr_s, warmup " + std::to_string(w), false, v.threshold));
        }
        drop_nonpositive(plot.series);
        draw(plot, dir, (v.key == "H" ? "lambda_" : "adam_") + file_part(p) + "_lr" + lr_text(lr));
      }
  }
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
  for (const std::string& p : g.placements) {
    Plot plot{p + ": lambda_max(H) per block, at init and at the last step", "block",
              "lambda_max(H), mean over seeds (log scale)", false, true, {}};
    auto per_block = [&](const std::vector<const Record*>& runs, bool last, std::string title) {
      Series s{std::move(title), {}, {}, {}};
      for (std::size_t b = 0; b < blocks; ++b) {
        std::vector<double> v;
        for (const Record* r : runs) {
          const std::vector<double>& l = lambdas(*r, key('H', b + 1));
          v.push_back(last ? (l.size() == r->list("steps").size() && r->get("blew_up") == 0 ? l.back() : NAN) : first_or_nan(l));
        }
        const double mean = stat_of(v).mean;
        if (!std::isfinite(mean)) continue;
        s.x.push_back(static_cast<double>(b));
        s.y.push_back(mean);
      }
      return s;
    };
    plot.series.push_back(per_block(g.at(p, go.warmups[0], go.lrs[0]), false, "init"));
    for (std::size_t w : go.warmups)
      for (double lr : go.lrs) {
        std::string title = "step ";
        title += std::to_string(measured_steps(go).back());
        title += ", lr " + lr_text(lr) + ", warmup " + std::to_string(w);
        plot.series.push_back(per_block(g.at(p, w, lr), true, title));
      }
    drop_nonpositive(plot.series);
    draw(plot, dir, "blocks_" + file_part(p));
  }
}

void report(const Cells& g, const std::vector<CurvatureScope>& scopes, const std::vector<unsigned>& seeds,
            const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const View sgd{"H", "SGD view", "lambda_H", sgd_threshold}, adam{"P", "Adam view", "lambda_P", adam_threshold(adam_beta1)};
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
  std::size_t estimates = 0, unconverged = 0;
  double worst = 0.0;
  const Table rows = rows_table(g, scopes, seeds, g.go.lanczos.tolerance, &estimates, &unconverged, &worst);
  std::printf("\nLanczos: %zu of the %zu lambda values in sharpness.csv met the tolerance %s within %zu products (step "
              "0's are shared by the lrs and warmups of a placement and seed); the largest residual "
              "|A y - lambda y| / |lambda| was %s\n",
              estimates - unconverged, estimates, fmt(g.go.lanczos.tolerance).c_str(), g.go.lanczos.max_iterations,
              fmt(worst, 3).c_str());
  rows.write_csv(dir / "sharpness.csv");
  ts.write_csv(dir / "summary_sgd.csv");
  ta.write_csv(dir / "summary_adam.csv");
  tb.write_csv(dir / "blocks.csv");
  draw_plots(g, scopes.size() - 1, dir);
  std::printf("\nwrote %s: sharpness.csv (a row per run x measured step x scope), summary_sgd.csv, summary_adam.csv, "
              "blocks.csv; lambda_<placement>_lr<lr>, adam_<placement>_lr<lr>, blocks_<placement>, lr_schedule (.png, .svg)\n",
              dir.string().c_str());
}

}  // namespace

void report_sharpness(const Results& results, const std::vector<std::string>& placements, const SharpnessOptions& go,
                      const std::vector<CurvatureScope>& scopes, const std::vector<unsigned>& seeds,
                      const std::filesystem::path& dir) {
  report(Cells{results, placements, go}, scopes, seeds, dir);
}

}  // namespace gs::experiments
