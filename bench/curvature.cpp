// What curvature costs and how accurate it is, on the warmup experiment's model: one gradient, one
// Hessian-vector product (analysis/hvp), and lambda_max of H and of Adam's preconditioned
// Hessian by Lanczos (analysis/eigen), wall time on one thread, in one run (docs/curvature.md).
//
// The model and batch are the warmup grid's: TransformerLM with vocab 16, 6 layers, d_model 32,
// 2 heads, d_ff 128, xavier init, one batch of 16 x 16 tokens of the order-2 Markov corpus
// (concentration 0.05). For each placement it prints
//   - the time of one gradient and of one hvp (median of --reps);
//   - the hvp's accuracy on this model: how far H v moves when h is halved or quadrupled, and the
//     asymmetry |u.Hv - v.Hu| / |u.Hv| (both would be 0 for an exact H v);
//   - lambda_max at init to --tolerance (the residual |H y - lambda y| <= tolerance * lambda), with
//     its iterations and seconds, against a run to 1e-6 from another start vector, whose value stands
//     in for the truth;
//   - the same for P^-1/2 H P^-1/2, P = sqrt(v_hat) + eps of Adam(0.9, 0.98, 1e-8) after --adam-steps
//     steps at lr 1e-3 on this batch, and lr * lambda against the thresholds 2 and 38 (beta1 0.9).
//
//   build/bin/bench_curvature [--placements post,pre] [--reps 5] [--tolerance 1e-3] [--adam-steps 10]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "analysis/hvp.hpp"
#include "analysis/eigen.hpp"
#include "analysis/curvature.hpp"
#include "experiments/lib/flags.hpp"
#include "experiments/lib/harness.hpp"
#include "experiments/lib/training.hpp"
#include "nn/optim.hpp"
#include "nn/transformer_lm.hpp"

extern "C" void openblas_set_num_threads(int);

using namespace gs;
using namespace gs::analysis;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double length_of(const Array& flat) { return std::sqrt(xt::sum(flat * flat)()); }

void print_lambda(const char* what, const CurvatureResult& r, const CurvatureResult& reference) {
  std::printf("  %-34s %11.6g  %3zu iterations  %6.2f s  residual/lambda %.1e  %s  (vs the 1e-6 run: %.1e relative)\n",
              what, r.lambda_max, r.iterations, r.seconds, r.residual / std::abs(r.lambda_max),
              r.converged ? "converged" : "NOT converged",
              std::abs(r.lambda_max - reference.lambda_max) / std::abs(reference.lambda_max));
}

nn::TransformerLM warmup_grid_model(const std::string& placement) {
  nn::ModelConfig config;
  config.vocab = 16;
  config.context = 16;
  config.d_model = 32;
  config.heads = 2;
  config.layers = 6;
  nn::apply_placement(config, placement);
  return nn::TransformerLM(config);
}

// The cost: one gradient against one hvp (two gradients, one each side of theta along v).
void time_gradient_and_hvp(HessianVectorProduct& H, const std::vector<Parameter>& params, int reps) {
  std::vector<double> gradient_times, hvp_times;
  const std::vector<Array> v = analysis::random_direction(params, 1);
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    H.gradient();
    gradient_times.push_back(seconds_since(t0));
    t0 = Clock::now();
    H(v);
    hvp_times.push_back(seconds_since(t0));
  }
  std::printf("  one gradient                       %8.2f ms   (median of %d)\n", 1e3 * median(gradient_times), reps);
  std::printf("  one hvp (two gradients)            %8.2f ms   ratio hvp / gradient %.2fx\n", 1e3 * median(hvp_times),
              median(hvp_times) / median(gradient_times));
}

// Accuracy: H v at the automatic h against h / 2 and 4h (the central difference's truncation and
// rounding errors), and the symmetry of u.Hv (H is symmetric, so u.Hv = v.Hu up to those errors).
void check_hvp_accuracy(HessianVectorProduct& H, const LossFunction& loss, const std::vector<Parameter>& params) {
  const std::vector<Array> v = analysis::random_direction(params, 1);
  const Array hv = join_flat(H(v));
  const double h = H.last_step();
  auto at_step = [&](double step) {
    HvpOptions o;
    o.step = step;
    HessianVectorProduct Hh(loss, params, o);
    return join_flat(Hh(v));
  };
  const Array half = at_step(h / 2), four = at_step(4 * h);
  const std::vector<Array> u = analysis::random_direction(params, 2);
  const double uHv = xt::sum(join_flat(u) * hv)(), vHu = xt::sum(join_flat(v) * join_flat(H(u)))();
  std::printf("  h = %.3g (|v| = %.4g, |theta| = %.4g)\n", h, length_of(join_flat(v)), [&] {
    double s = 0.0;
    for (const Parameter& p : params) s += xt::sum(p.value() * p.value())();
    return std::sqrt(s);
  }());
  std::printf("  |Hv(h) - Hv(h/2)| / |Hv| %.1e   |Hv(h) - Hv(4h)| / |Hv| %.1e   |u.Hv - v.Hu| / |u.Hv| %.1e\n",
              length_of(hv - half) / length_of(hv), length_of(hv - four) / length_of(hv), std::abs(uHv - vHu) / std::abs(uHv));
}

// Adam's preconditioner after `steps` steps on this batch (the warmup grid's Adam settings): the P
// of its last step, lr m_hat / P (nn::Adam::preconditioner).
std::vector<Array> adam_preconditioner(nn::TransformerLM& model, const nn::Batch& batch, int steps) {
  nn::AdamOptions ao;
  ao.beta2 = 0.98;
  nn::Adam adam(model.named_parameters(), ao);
  Tape tape;
  TapeScope scope(tape);
  for (int s = 0; s < steps; ++s) {
    tape.reset();
    model.loss(batch.inputs, batch.targets).backward();
    adam.step(1e-3);
    adam.zero_grad();
  }
  return adam.preconditioner();
}

void run(const std::string& placement, const nn::Batch& batch, int reps, double tolerance, int adam_steps) {
  nn::TransformerLM model = warmup_grid_model(placement);
  const std::vector<Parameter> params = analysis::parameter_handles(model);
  const LossFunction loss = analysis::batch_loss(model, batch);
  HessianVectorProduct H(loss, params);
  std::printf("%s-LN: %zu parameters, loss at init %.6f\n", placement.c_str(), H.size(), [&] {
    double L = 0.0;
    H.gradient(&L);
    return L;
  }());
  time_gradient_and_hvp(H, params, reps);
  check_hvp_accuracy(H, loss, params);

  // lambda_max at the given tolerance, against a tight run from another start vector: a second
  // opinion, not the same Krylov space run longer.
  LanczosOptions o;
  o.tolerance = tolerance;
  o.max_iterations = 100;
  LanczosOptions tight = o;
  tight.tolerance = 1e-6;
  tight.max_iterations = 300;
  tight.seed = 2;
  const CurvatureResult plain = hessian_lambda_max(loss, params, o);
  const CurvatureResult plain_ref = hessian_lambda_max(loss, params, tight);
  char label[64];
  std::snprintf(label, sizeof label, "lambda_max(H), tolerance %.0e", tolerance);
  print_lambda(label, plain, plain_ref);
  std::printf("  %-34s %11.6g  %3zu iterations  %6.2f s\n", "lambda_max(H), 1e-6, other start", plain_ref.lambda_max,
              plain_ref.iterations, plain_ref.seconds);

  // The same after a few Adam steps, and the preconditioned lambda_max(P^-1/2 H P^-1/2) that Adam's
  // stability threshold is about.
  const std::vector<Array> P = adam_preconditioner(model, batch, adam_steps);
  const CurvatureResult pre = preconditioned_lambda_max(loss, params, P, o);
  const CurvatureResult pre_ref = preconditioned_lambda_max(loss, params, P, tight);
  const CurvatureResult after = hessian_lambda_max(loss, params, o);
  std::snprintf(label, sizeof label, "after %d Adam steps: lambda_max(H)", adam_steps);
  std::printf("  %-34s %11.6g  %3zu iterations  %6.2f s\n", label, after.lambda_max, after.iterations, after.seconds);
  std::snprintf(label, sizeof label, "  lambda_max(P^-1/2 H P^-1/2)");
  print_lambda(label, pre, pre_ref);
  std::printf("  at lr 1e-3: lr * lambda_max(H) = %.3g (GD threshold 2), lr * lambda_max(P^-1/2 H P^-1/2) = %.3g "
              "(Adam's, beta1 0.9: 38)\n\n",
              1e-3 * after.lambda_max, 1e-3 * pre_ref.lambda_max);
}

}  // namespace

int main(int argc, char** argv) {
  experiments::Experiment ex("bench_curvature",
                             "What curvature costs: a gradient, an hvp and lambda_max by Lanczos on the warmup grid's model");
  std::vector<std::string> placements{"post", "pre"};
  int reps = 5, adam_steps = 10;
  double tolerance = 1e-3;
  experiments::add_flag(ex.app, "--placements", placements, "placements to measure (comma-separated)",
                        experiments::placement());
  experiments::add_flag(ex.app, "--reps", reps, "repetitions of the timed gradient and hvp (the median is reported)",
                        experiments::Whole{1});
  experiments::add_flag(ex.app, "--tolerance", tolerance, "Lanczos's tolerance: residual <= tolerance * |lambda|",
                        experiments::RealRange::within(1e-12, 0.5));
  experiments::add_flag(ex.app, "--adam-steps", adam_steps, "Adam steps before the preconditioned lambda_max",
                        experiments::Whole{1});
  return ex.main(argc, argv, [&] {
    openblas_set_num_threads(1);
    nn::CorpusOptions mo;  // the warmup grid's corpus: vocab 16, order 2, concentration 0.05
    mo.train_tokens = 1 << 14;
    mo.validation_tokens = 1 << 10;
    const nn::Corpus corpus = nn::build_corpus(mo, 16, 0, 16);
    std::mt19937_64 rng(0);
    const nn::Batch batch = corpus.data.batch(nn::Split::train, 16, 16, rng);
    std::printf("curvature: vocab 16, 6 layers, d_model 32, 2 heads, d_ff 128; one batch of 16 x 16 Markov tokens; "
                "one thread\n\n");
    for (const std::string& p : placements) run(p, batch, reps, tolerance, adam_steps);
  });
}
