// sharpness: the curvature of the loss during training, against the edge of stability, per placement,
// learning rate and warmup (the tools: analysis/curvature.hpp, docs/curvature.md).
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
#include <functional>
#include <future>
#include <map>
#include <mutex>

#include "experiments/lib/experiment.hpp"
#include "analysis/curvature.hpp"
#include "analysis/eigen.hpp"
#include "experiments/lib/graph.hpp"
#include "experiments/sharpness_report.hpp"
#include "nn/data/markov.hpp"

namespace {

// The measurements of one run (SharpnessRun, sharpness_report.hpp) at the step taken.
struct Measurer {
  nn::TransformerLM& model;
  const nn::Batch& batch;
  const std::vector<CurvatureScope>& scopes;
  const LanczosOptions& lanczos;
  SharpnessRun& r;
  Tick& tick;

  void H(std::size_t s) {
    const std::vector<Parameter> all = parameter_handles(model);
    for (std::size_t j = 0; j < scopes.size(); ++j) {
      const CurvatureResult c = scope_lambda_max(batch_loss(model, batch), all, scopes[j], lanczos);
      r.H[j].push_back(c.lambda_max);
      r.H_res[j].push_back(c.residual / std::abs(c.lambda_max));
      tick(1, "step " + std::to_string(s) + " " + scopes[j].name + " lambda_H " + fmt(c.lambda_max));
    }
  }
  void P(std::size_t s, const std::vector<Array>& preconditioner) {
    const std::vector<Parameter> all = parameter_handles(model);
    for (std::size_t j = 0; j < scopes.size(); ++j) {
      const CurvatureResult c =
          scope_preconditioned_lambda_max(batch_loss(model, batch), all, preconditioner, scopes[j], lanczos);
      r.P[j].push_back(c.lambda_max);
      r.P_res[j].push_back(c.residual / std::abs(c.lambda_max));
      tick(1, "step " + std::to_string(s) + " " + scopes[j].name + " lambda_P " + fmt(c.lambda_max));
    }
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
  SharpnessRun get(const std::string& key, const std::function<SharpnessRun()>& measure) {
    std::promise<SharpnessRun> promise;
    std::shared_future<SharpnessRun> result;
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
  std::map<std::string, std::shared_future<SharpnessRun>> made_;
};

struct Run {
  nn::TransformerLM model;
  nn::Adam adam;
  nn::Schedule schedule;
  nn::StepSetup setup;
  nn::Batch batch;  // the measurement batch: one held-out batch of the seed
  Run(const ModelOptions& m, const nn::Corpus& corpus, double lr, std::size_t warmup, std::size_t steps)
      : model(m.config()),
        adam(model.named_parameters(), nn::AdamOptions{adam_beta1, 0.98, 1e-8, 0.0, false}),
        schedule{nn::ScheduleKind::warmup, lr, warmup, steps, 0.1},
        setup{&corpus.data, m.batch, m.seq, m.seed, schedule, 0.0, step_hooks(model)} {
    std::mt19937_64 rng = nn::rng_for(m.seed, 0, nn::RngPurpose::probe);
    batch = corpus.data.batch(nn::Split::validation, m.batch, m.seq, rng);
  }
};

// Step 0: the loss, H at the initial parameters, and P with P of the first update (at the initial
// parameters too), unless the first step's loss was NaN/Inf.
SharpnessRun measure_init(const ModelOptions& m, const nn::Corpus& corpus, const SharpnessOptions& go, Tick& tick) {
  Run run(m, corpus, go.lrs[0], 0, go.steps);
  const std::vector<CurvatureScope> scopes = curvature_scopes(run.model);
  const std::vector<Parameter> params = parameter_handles(run.model);
  SharpnessRun r;
  r.H.resize(scopes.size()), r.H_res.resize(scopes.size()), r.P.resize(scopes.size()), r.P_res.resize(scopes.size());
  Measurer measure{run.model, run.batch, scopes, go.lanczos, r, tick};
  r.loss.push_back(measure.loss());
  measure.H(0);
  const std::vector<Array> before = values_of(params);
  if (nn::train_step(run.model, run.adam, run.setup, 0).finite()) {
    set_values(params, before);
    measure.P(0, run.adam.preconditioner());
  }
  return r;
}

SharpnessRun run_one(const ModelOptions& m, const nn::Corpus& corpus, double lr, std::size_t warmup,
                     const SharpnessOptions& go, const SharpnessRun& init, Tick& tick) {
  Run run(m, corpus, lr, warmup, go.steps);
  const std::vector<CurvatureScope> scopes = curvature_scopes(run.model);
  SharpnessRun r = init;
  r.steps.push_back(0.0);
  r.lr.push_back(run.schedule.lr(0));
  Measurer measure{run.model, run.batch, scopes, go.lanczos, r, tick};
  for (std::size_t s = 0; s < go.steps && r.blew_up == 0; ++s) {
    const nn::StepResult step = nn::train_step(run.model, run.adam, run.setup, s);
    if (!step.finite()) {
      refuse_first_step(step, s, "");
      r.blew_up = s + 1;
    }
    const std::size_t taken = s + 1;  // updates taken
    if (r.blew_up == 0 && taken % go.every == 0) {
      r.steps.push_back(static_cast<double>(taken));
      r.lr.push_back(run.schedule.lr(taken));
      r.loss.push_back(measure.loss());
      measure.H(taken);
      measure.P(taken, run.adam.preconditioner());
    }
  }
  r.final_loss = r.blew_up ? NAN : nn::evaluate(run.model, corpus.data, m.batch, m.seq, go.eval_batches, m.seed);
  r.verdict = verdict_of(r.final_loss, Thresholds{corpus.uniform, corpus.unigram, go.margin});
  return r;
}

// --dump: the model of the model flags at init on the dump batch, with lambda_max.npy.
void dump_with_lambda(const Experiment& ex, const LanczosOptions& lanczos) {
  const ModelOptions& m = ex.model;
  nn::TransformerLM model(m.config());
  const nn::Batch batch = nn::dump_batch(nn::dump_corpus(m.vocab, m.batch, m.seq, m.seed), m.batch, m.seq, m.seed);
  const CurvatureResult c = hessian_lambda_max(batch_loss(model, batch), parameter_handles(model), lanczos);
  std::printf("dump: lambda_max(H) = %.10g (%zu products, residual / lambda %.1e, %s)\n", c.lambda_max, c.iterations,
              c.residual / std::abs(c.lambda_max), c.converged ? "converged" : "NOT converged");
  dump_model(ex.dump, model, batch, {{"lambda_max", Array{c.lambda_max}}});
}

void print_setup(const Experiment& ex, const SharpnessOptions& go, const nn::Corpus& corpus, std::size_t blocks) {
  const ModelOptions& mo = ex.model;
  std::string at;
  for (std::size_t k : measured_steps(go)) at += (at.empty() ? "" : ", ") + std::to_string(k);
  std::printf("sharpness: %zu runs (%zu placements x %zu lrs x %zu warmups x %zu seeds), %zu steps each, measured at "
              "%zu steps (%s)\n",
              ex.placements.size() * go.warmups.size() * go.lrs.size() * ex.seeds, ex.placements.size(), go.lrs.size(), go.warmups.size(), ex.seeds, go.steps, measured_steps(go).size(), at.c_str());
  std::printf("  model: layers %zu, d_model %zu, heads %zu, d_ff %zu, init %s; batch %zu x seq %zu; Markov corpus "
              "(vocab %zu, order %zu); Adam(%g, 0.98, eps 1e-8), linear warmup then constant lr; %u parallel jobs%s\n",
              mo.layers, mo.d_model, mo.heads, mo.config().ff(), mo.init.c_str(), mo.batch, mo.seq, mo.vocab,
              go.corpus.order, adam_beta1, ex.jobs, mo.qk_note().c_str());
  std::printf("  curvature of the loss of one fixed held-out batch per seed, for the whole model and each of the %zu "
              "blocks; Lanczos: at most %zu products (2 gradients each), tolerance %s\n",
              blocks, go.lanczos.max_iterations, fmt(go.lanczos.tolerance).c_str());
  std::printf("  lr_s = the rate of the step taken from step s; thresholds: SGD lr_s * lambda_H < 2, Adam "
              "(beta1 %g) lr_s * lambda_P < %s\n",
              adam_beta1, fmt(adam_threshold(adam_beta1)).c_str());
  std::printf("  step 0: Adam's P does not exist before the first update; lambda_P at step 0 uses P of the first "
              "update (v_hat = g_0^2, P = |g_0| + eps) at the initial parameters\n");
  std::printf("  verdict (as warmup's, on the held-out loss after the last step): diverged > %.4f, stuck > %.4f, "
              "else trained\n",
              corpus.uniform + go.margin, corpus.unigram - go.margin);
}

void run(Experiment& ex, SharpnessOptions& go) {
  const ModelOptions& mo = ex.model;
  keep_first_of_each(go.lrs);
  keep_first_of_each(go.warmups);
  const std::size_t cells = ex.placements.size() * go.warmups.size() * go.lrs.size() * ex.seeds;
  ex.check_memory(mo.config(), 2, false, cells, nn::corpus_bytes(go.corpus, mo.vocab));
  const nn::Corpus corpus = nn::build_corpus(go.corpus, mo.vocab, mo.seed, mo.seq);
  check_margin(corpus, go.margin);  // before any run: a margin that leaves no verdict is refused
  const std::vector<CurvatureScope> scopes = curvature_scopes(nn::TransformerLM(mo.config()));
  print_setup(ex, go, corpus, scopes.size() - 1);
  Grid grid;
  grid.axis("placement", ex.placements).axis("warmup", labels(go.warmups)).axis("lr", labels(go.lrs));
  grid.axis("seed", labels(ex.seed_list()));
  const auto cost = [&](const Cell&) { return 2 * scopes.size() * measured_steps(go).size(); };
  InitMeasurements init;
  const auto runs = run_cells<SharpnessRun>(ex, grid, "lambda_max estimates", cost, [&](const Cell& c, Tick& tick) {
    const ModelOptions m = ex.cell_model(c);
    const SharpnessRun at_init = init.get(m.placement + " " + std::to_string(m.seed), [&] { return measure_init(m, corpus, go, tick); });
    return run_one(m, corpus, go.lrs[c["lr"]], go.warmups[c["warmup"]], go, at_init, tick);
  });
  if (!runs) return;
  report_sharpness(*runs, grid, go, scopes, ex.seed_list(), ex.out);
  if (!ex.dump.empty()) dump_with_lambda(ex, go.lanczos);
}

}  // namespace

int main(int argc, char** argv) {
  Experiment ex("sharpness",
                "Curvature against the edge of stability: lambda_max of the Hessian (SGD view, lr * lambda vs 2) and of "
                "Adam's preconditioned Hessian (Adam view, lr * lambda vs 38) at init and every --every steps, for the "
                "whole model and per block; placements x learning rates x warmup x seeds, trained as the warmup grid.",
                "out/sharpness");
  ex.model = stability_model();
  ex.seeds = 2;
  ex.placements = {"post", "pre"};
  ex.dump_at_init = false;
  SharpnessOptions go;
  add_flag(ex.app, "--lrs", go.lrs, "peak learning rates (comma-separated)", RealRange::above(0));
  add_flag(ex.app, "--warmups", go.warmups, "linear-warmup lengths W in steps, 0: none (comma-separated)", Whole{0});
  add_training_flags(ex.app, go, {"--steps", "--eval-batches", "--margin"});
  add_flag(ex.app, "--every", go.every, "measure the curvature at step 0 and every this many steps", Whole{1});
  add_flag(ex.app, "--lanczos-iterations", go.lanczos.max_iterations,
           "Lanczos: Hessian-vector products at most per lambda_max (each costs two gradients)", Whole{1, 10000});
  add_flag(ex.app, "--tolerance", go.lanczos.tolerance, "Lanczos: converged when |A y - lambda y| <= tolerance * |lambda|",
           RealRange::within(1e-12, 0.5));
  add_corpus_flags(ex.app, go.corpus, false);
  describe(ex.app, "--dump", "write the model of the model flags at init, its gradients on the dump batch of --seed, and "
                             "lambda_max.npy, the top eigenvalue of H of that batch's loss (Lanczos at the flags above); as train's --dump, "
                             "an output in addition to the run: the grid is measured too, and the dump written after it");
  ex.check_flags = [&] {
    const std::string every = go.at_most_steps("--every", go.every);
    return every.empty() ? go.warmups_below_steps(go.warmups) : every;
  };
  ex.prints_time = true;
  return ex.main(argc, argv, [&] { run(ex, go); });
}
