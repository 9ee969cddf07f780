// sharpness: the curvature of the loss during training, against the edge of stability, per placement,
// learning rate and warmup (issue 17; the tools: experiments/common/curvature.hpp, docs/curvature.md).
//
// A grid: placements x peak learning rates x warmup lengths x seeds, each run trained from scratch as
// the warmup grid trains it (Adam(0.9, 0.98, eps 1e-8), a linear warmup from lr/W to lr over W steps,
// then constant; the Markov corpus; the same batches, so the same losses and verdicts as `warmup` at
// these flags: measuring never changes the parameters, bit for bit). At step 0 and every --every steps
// (s = the number of updates taken) it measures, on one fixed held-out batch per seed, by Lanczos:
//   lambda_H  the largest eigenvalue of the Hessian H of the loss, for the whole model and restricted
//             to each block's parameters (the principal submatrix: where the curvature sits);
//   lambda_P  the same for P^-1/2 H P^-1/2, P = sqrt(v_hat) + eps = Adam::preconditioner(), the
//             diagonal that Adam's step lr m_hat / P divides by.
// At step 0 no update has been taken and P does not exist; lambda_P at step 0 is measured at the
// initial parameters with P of the first update (v_hat = g_0^2: P = |g_0| + eps), the preconditioner
// that the first step, taken from there, divides by.
// Each is compared with its threshold at the rate of the step taken from there, lr_s = schedule.lr(s):
//   SGD view   lr_s * lambda_H < 2                          (gradient descent on a quadratic)
//   Adam view  lr_s * lambda_P < (2 + 2 beta1) / (1 - beta1) = 38 at beta1 0.9 (Cohen et al. 2022)
// These are the thresholds of a quadratic model of the loss: above them a step along the top
// eigenvector overshoots; they are evidence about stability, not a verdict on the run.
//
//   build/bin/sharpness                                   the default grid (time in --help)
//   build/bin/sharpness --placements post,pre,peri --lrs 1e-3,3e-3,1e-2 --warmups 0,50 --steps 120
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <future>
#include <map>
#include <mutex>

#include "engine/engine.hpp"
#include "experiments/common/curvature.hpp"
#include "experiments/common/graph.hpp"
#include "experiments/common/harness.hpp"
#include "experiments/common/report.hpp"
#include "experiments/common/training.hpp"
#include "nn/optim.hpp"
#include "nn/transformer_lm.hpp"

using namespace gs;
using namespace gs::experiments;

namespace {

constexpr double beta1 = 0.9;

struct GridOptions {
  std::vector<double> lrs = {1e-3, 1e-2};
  std::vector<std::size_t> warmups = {0, 50};
  std::size_t steps = 120;
  std::size_t every = 30;  // 5 measurements of 120 steps: the budget of a few minutes on 2 cores
  std::size_t eval_batches = 10;
  double margin = 0.05;
  LanczosOptions lanczos{1, 20, 1e-3, 1};
  std::size_t markov_order = 2;
  double markov_concentration = 0.05;
};

std::vector<std::size_t> measured_steps(const GridOptions& go) {
  std::vector<std::size_t> s;
  for (std::size_t k = 0; k <= go.steps; k += go.every) s.push_back(k);
  return s;
}

// The record of one run: "steps" (measured), "lr" (lr_s at each), "loss" (the measurement batch's loss),
// per scope j (0 = the model, 1 + i = block i) "H<j>", "P<j>" (lambda_max) and "H<j>.res", "P<j>.res"
// (the residual |A y - lambda y| / |lambda|; converged when <= --tolerance); "final_loss" (held out),
// "blew_up" (the 1-based step whose training loss was NaN/Inf, 0: none) and "verdict". A run that blew
// up is measured no further.
struct Measurer {
  nn::TransformerLM& model;
  const nn::Batch& batch;
  const std::vector<CurvatureScope>& scopes;
  const LanczosOptions& lanczos;
  Record& r;
  Tick& tick;

  void H(std::size_t s) {
    const std::vector<Parameter> all = parameter_handles(model);
    for (std::size_t j = 0; j < scopes.size(); ++j) {
      const CurvatureResult c = scope_lambda_max(batch_loss(model, batch), all, scopes[j], lanczos);
      put("H" + std::to_string(j), c);
      tick(1, "step " + std::to_string(s) + " " + scopes[j].name + " lambda_H " + fmt(c.lambda_max));
    }
  }
  void P(std::size_t s, const std::vector<Array>& preconditioner) {
    const std::vector<Parameter> all = parameter_handles(model);
    for (std::size_t j = 0; j < scopes.size(); ++j) {
      const CurvatureResult c =
          scope_preconditioned_lambda_max(batch_loss(model, batch), all, preconditioner, scopes[j], lanczos);
      put("P" + std::to_string(j), c);
      tick(1, "step " + std::to_string(s) + " " + scopes[j].name + " lambda_P " + fmt(c.lambda_max));
    }
  }
  void put(const std::string& name, const CurvatureResult& c) {
    r.push(name, c.lambda_max);
    r.push(name + ".res", c.residual / std::abs(c.lambda_max));
  }
  double loss() {
    Tape tape;
    TapeScope scope(tape);
    return model.loss(batch.inputs, batch.targets).value()();
  }
};

std::vector<Array> values_of(const std::vector<Parameter>& params) {
  std::vector<Array> v;
  for (const Parameter& p : params) v.push_back(p.value());
  return v;
}
void set_values(std::vector<Parameter> params,  // handles: copies share the values
                const std::vector<Array>& values) {
  for (std::size_t i = 0; i < params.size(); ++i) params[i].value() = values[i];
}

// The measurements at step 0 depend on the placement and the seed only: the model, the batch and the
// first update's P = |g_0| + eps are the same at every lr and warmup (those act from the first update
// on). Each is made once, by the first cell that needs it, and shared by the others (bit for bit what
// each cell would have measured, so a shard's numbers do not depend on which cells it holds).
class InitMeasurements {
 public:
  Record get(const std::string& key, const std::function<Record()>& measure) {
    std::promise<Record> promise;
    std::shared_future<Record> result;
    bool mine = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = made_.find(key);
      if (it == made_.end()) {
        result = made_[key] = promise.get_future().share();
        mine = true;
      } else {
        result = it->second;
      }
    }
    if (mine) {
      try {
        promise.set_value(measure());
      } catch (...) {
        promise.set_exception(std::current_exception());
      }
    }
    return result.get();
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_future<Record>> made_;
};

struct Run {
  nn::TransformerLM model;
  nn::Adam adam;
  nn::Schedule schedule;
  StepSetup setup;
  nn::Batch batch;  // the measurement batch: one held-out batch of the seed
  Run(const ModelOptions& m, const Corpus& corpus, double lr, std::size_t warmup, std::size_t steps)
      : model(m.config()),
        adam(model.named_parameters(), nn::AdamOptions{beta1, 0.98, 1e-8, 0.0, false}),
        schedule{nn::ScheduleKind::warmup, lr, warmup, steps, 0.1},
        setup{&corpus.data, m.batch, m.seq, m.seed, schedule, 0.0} {
    std::mt19937_64 rng = rng_for(m.seed, 0, RngPurpose::probe);
    batch = corpus.data.batch(nn::Split::validation, m.batch, m.seq, rng);
  }
};

// Step 0: "loss", H<j> at the initial parameters, and P<j> with P of the first update (at the
// initial parameters too), unless the first step's loss was NaN/Inf.
Record measure_init(const ModelOptions& m, const Corpus& corpus, const GridOptions& go, Tick& tick) {
  Run run(m, corpus, go.lrs[0], 0, go.steps);
  const std::vector<CurvatureScope> scopes = curvature_scopes(run.model);
  const std::vector<Parameter> params = parameter_handles(run.model);
  Record r;
  Measurer measure{run.model, run.batch, scopes, go.lanczos, r, tick};
  r.push("loss", measure.loss());
  measure.H(0);
  const std::vector<Array> before = values_of(params);
  if (train_step(run.model, run.adam, run.setup, 0).finite()) {
    set_values(params, before);
    measure.P(0, run.adam.preconditioner());
  }
  return r;
}

Record run_one(const ModelOptions& m, const Corpus& corpus, double lr, std::size_t warmup, const GridOptions& go,
               const Record& init, Tick& tick) {
  Run run(m, corpus, lr, warmup, go.steps);
  const std::vector<CurvatureScope> scopes = curvature_scopes(run.model);
  Record r = init;
  r.push("steps", 0.0);
  r.push("lr", run.schedule.lr(0));
  Measurer measure{run.model, run.batch, scopes, go.lanczos, r, tick};
  std::size_t blew_up = 0;
  for (std::size_t s = 0; s < go.steps && blew_up == 0; ++s) {
    if (!train_step(run.model, run.adam, run.setup, s).finite()) blew_up = s + 1;
    const std::size_t taken = s + 1;  // updates taken
    if (blew_up == 0 && taken % go.every == 0) {
      r.push("steps", static_cast<double>(taken));
      r.push("lr", run.schedule.lr(taken));
      r.push("loss", measure.loss());
      measure.H(taken);
      measure.P(taken, run.adam.preconditioner());
    }
  }
  const double final_loss = blew_up ? NAN : evaluate(run.model, corpus.data, m.batch, m.seq, go.eval_batches, m.seed);
  r.set("final_loss", final_loss);
  r.set("blew_up", static_cast<double>(blew_up));
  r.set("verdict", static_cast<double>(verdict_of(final_loss, Thresholds{corpus.uniform, corpus.unigram, go.margin})));
  return r;
}

// ---- reporting ----

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
  const GridOptions& go;
  std::vector<const Record*> at(const std::string& p, std::size_t w, double lr) const {
    return results.where({{"placement", p}, {"warmup", std::to_string(w)}, {"lr", label(lr)}});
  }
};

// A row per (placement, warmup, lr) for the whole model in one view: at init, the largest over the
// run, the first step above the threshold and the fraction of measured steps above it, per seed
// where they are not averaged.
Table view_table(const Cells& g, const View& v) {
  Table t({"placement", "warmup", "lr", v.lambda + " init", "lr*l init", v.lambda + " max", "lr*l max",
           "first step > " + fmt(v.threshold), "fraction above", "verdict"});
  for (const std::string& p : g.placements)
    for (std::size_t w : g.go.warmups)
      for (double lr : g.go.lrs) {
        const auto runs = g.at(p, w, lr);
        std::vector<double> init, scaled_init, top, scaled_top, above;
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
                   fmt(stat_of(top), 3), fmt(stat_of(scaled_top), 3), first, fmt(stat_of(above), 2),
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
      for (const Record* r : g.at(p, g.go.warmups[0], g.go.lrs[0])) v.push_back(first_or_nan(lambdas(*r, "H" + std::to_string(b + 1))));
      row.push_back(fmt(stat_of(v), 3));
    }
    t.add_row(row);
    for (std::size_t w : g.go.warmups)
      for (double lr : g.go.lrs) {
        row = {p, std::to_string(w), lr_text(lr)};
        for (std::size_t b = 0; b < blocks; ++b) {
          std::vector<double> sgd, adam;
          for (const Record* r : g.at(p, w, lr)) {
            sgd.push_back(max_or_nan(scaled(*r, "H" + std::to_string(b + 1))));
            adam.push_back(max_or_nan(scaled(*r, "P" + std::to_string(b + 1))));
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
        const std::string h = "H" + std::to_string(j), p = "P" + std::to_string(j);
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
                   fmt(value(h + ".res"), 3), fmt(lp, 6), fmt(lr * lp, 6), lr * lp > adam_threshold(beta1) ? "1" : "0",
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
  const GridOptions& go = g.go;
  for (const View& v : {View{"H", "lambda_max(H)", "", sgd_threshold}, View{"P", "lambda_max(P^-1/2 H P^-1/2)", "", adam_threshold(beta1)}}) {
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
          const std::vector<double>& l = lambdas(*r, "H" + std::to_string(b + 1));
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
      for (double lr : go.lrs)
        plot.series.push_back(per_block(g.at(p, w, lr), true, "step " + std::to_string(measured_steps(go).back()) +
                                                                  ", lr " + lr_text(lr) + ", warmup " + std::to_string(w)));
    drop_nonpositive(plot.series);
    draw(plot, dir, "blocks_" + file_part(p));
  }
}

void report(const Cells& g, const std::vector<CurvatureScope>& scopes, const std::vector<unsigned>& seeds,
            const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const View sgd{"H", "SGD view", "lambda_H", sgd_threshold}, adam{"P", "Adam view", "lambda_P", adam_threshold(beta1)};
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
  std::printf("\nLanczos: %zu of %zu estimates met the tolerance %s within %zu products; the largest residual "
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

// --dump: the model of the model flags at init on the dump batch, with lambda_max.npy.
void dump_with_lambda(const Experiment& ex, const LanczosOptions& lanczos) {
  const ModelOptions& m = ex.model;
  nn::TransformerLM model(m.config());
  const nn::Batch batch = dump_batch(dump_corpus(m.vocab, m.batch, m.seq, m.seed), m.batch, m.seq, m.seed);
  const CurvatureResult c = hessian_lambda_max(batch_loss(model, batch), parameter_handles(model), lanczos);
  std::printf("dump: lambda_max(H) = %.10g (%zu products, residual / lambda %.1e, %s)\n", c.lambda_max, c.iterations,
              c.residual / std::abs(c.lambda_max), c.converged ? "converged" : "NOT converged");
  dump_model(ex.dump, model, batch, {{"lambda_max", Array{c.lambda_max}}});
}

}  // namespace

int main(int argc, char** argv) {
  Experiment ex("sharpness",
                "Curvature against the edge of stability: lambda_max of the Hessian (SGD view, lr * lambda vs 2) and of "
                "Adam's preconditioned Hessian (Adam view, lr * lambda vs 38) at init and every --every steps, for the "
                "whole model and per block; placements x learning rates x warmup x seeds, trained as the warmup grid.\n"
                "The default grid took 150 s on 2 cores (AMD EPYC, --jobs 2).",
                "out/sharpness");
  ex.model = stability_model();
  ex.seeds = 2;
  ex.placements = {"post", "pre"};
  ex.dump_at_init = false;
  GridOptions go;
  add_flag(ex.app, "--lrs", go.lrs, "peak learning rates (comma-separated)");
  add_flag(ex.app, "--warmups", go.warmups, "linear-warmup lengths W in steps, 0: none (comma-separated)");
  add_flag(ex.app, "--steps", go.steps, "training steps per run");
  add_flag(ex.app, "--every", go.every, "measure the curvature at step 0 and every this many steps");
  add_flag(ex.app, "--lanczos-iterations", go.lanczos.max_iterations,
           "Lanczos: Hessian-vector products at most per lambda_max (each costs two gradients)");
  add_flag(ex.app, "--tolerance", go.lanczos.tolerance, "Lanczos: converged when |A y - lambda y| <= tolerance * |lambda|");
  add_flag(ex.app, "--eval-batches", go.eval_batches, "held-out batches averaged for the final loss (the verdict)");
  add_flag(ex.app, "--margin", go.margin, "verdict margin in nats (as warmup's)");
  add_flag(ex.app, "--markov-order", go.markov_order, "Markov corpus: tokens of context");
  add_flag(ex.app, "--markov-concentration", go.markov_concentration, "Markov corpus: Dirichlet concentration");
  describe(ex.app, "--dump", "write the model of the model flags at init, its gradients on the dump batch of --seed, and "
                             "lambda_max.npy, the top eigenvalue of H of that batch's loss (Lanczos at the flags above)");
  return ex.main(argc, argv, [&] {
    const auto start = std::chrono::steady_clock::now();
    const ModelOptions& mo = ex.model;
    keep_first_of_each(go.lrs);
    keep_first_of_each(go.warmups);
    if (go.every > go.steps) throw FlagError("--every " + std::to_string(go.every) + " is more than --steps " + std::to_string(go.steps));
    const std::size_t runs = ex.placements.size() * go.warmups.size() * go.lrs.size() * ex.seeds;
    ex.check_memory(mo.config(), 2, false, runs, corpus_bytes(mo.vocab, go.markov_order, ""));
    MarkovCorpusOptions co;
    co.vocab = mo.vocab;
    co.order = go.markov_order;
    co.concentration = go.markov_concentration;
    co.seed = mo.seed;
    const Corpus corpus = markov_corpus(co, mo.seq);
    const std::vector<CurvatureScope> scopes = curvature_scopes(nn::TransformerLM(mo.config()));
    const std::size_t measured = measured_steps(go).size();
    std::string at;
    for (std::size_t k : measured_steps(go)) at += (at.empty() ? "" : ", ") + std::to_string(k);
    std::printf("sharpness: %zu runs (%zu placements x %zu lrs x %zu warmups x %zu seeds), %zu steps each, measured at "
                "%zu steps (%s)\n",
                runs, ex.placements.size(), go.lrs.size(), go.warmups.size(), ex.seeds, go.steps, measured, at.c_str());
    std::printf("  model: layers %zu, d_model %zu, heads %zu, d_ff %zu, init %s; batch %zu x seq %zu; Markov corpus "
                "(vocab %zu, order %zu); Adam(%g, 0.98, eps 1e-8), linear warmup then constant lr; %u parallel jobs\n",
                mo.layers, mo.d_model, mo.heads, mo.config().ff(), mo.init.c_str(), mo.batch, mo.seq, mo.vocab,
                go.markov_order, beta1, ex.jobs);
    std::printf("  curvature of the loss of one fixed held-out batch per seed, for the whole model and each of the %zu "
                "blocks; Lanczos: at most %zu products (2 gradients each), tolerance %s\n",
                scopes.size() - 1, go.lanczos.max_iterations, fmt(go.lanczos.tolerance).c_str());
    std::printf("  lr_s = the rate of the step taken from step s; thresholds: SGD lr_s * lambda_H < 2, Adam "
                "(beta1 %g) lr_s * lambda_P < %s\n",
                beta1, fmt(adam_threshold(beta1)).c_str());
    std::printf("  step 0: Adam's P does not exist before the first update; lambda_P at step 0 uses P of the first "
                "update (v_hat = g_0^2, P = |g_0| + eps) at the initial parameters\n");
    std::printf("  verdict (as warmup's, on the held-out loss after the last step): diverged > %.4f, stuck > %.4f, "
                "else trained\n",
                corpus.uniform + go.margin, corpus.unigram - go.margin);
    std::fflush(stdout);
    Grid grid;
    grid.axis("placement", ex.placements).axis("warmup", labels(go.warmups)).axis("lr", labels(go.lrs));
    grid.axis("seed", labels(ex.seed_list()));
    const auto cost = [&](const Cell&) { return 2 * scopes.size() * measured; };
    InitMeasurements init;
    const auto results = ex.run_cells(grid, "lambda_max estimates", cost, [&](const Cell& c, Tick& tick) {
      ModelOptions m = mo;
      m.placement = ex.placements[c["placement"]];
      m.seed = ex.seed_list()[c["seed"]];
      const Record at_init = init.get(m.placement + " " + std::to_string(m.seed), [&] { return measure_init(m, corpus, go, tick); });
      return run_one(m, corpus, go.lrs[c["lr"]], go.warmups[c["warmup"]], go, at_init, tick);
    });
    if (!results) return;
    report(Cells{*results, ex.placements, go}, scopes, ex.seed_list(), ex.out);
    if (!ex.dump.empty()) dump_with_lambda(ex, go.lanczos);
    std::printf("time: %.1f s\n", seconds_since(start));
  });
}
