// dynamics: the first few hundred training steps, step by step, per placement, with and without
// warmup, measured link by link against Wang et al. 2022 (DeepNet, section 3). Their account of why
// Post-LN fails to train without warmup is a chain:
//   (1) the first updates move the model's output a lot (Adam's first steps have size ~lr in every
//       coordinate, whatever the gradient's size);
//   (2) the inputs of the LayerNorms grow;
//   (3) the gradient through an LN shrinks: LN(x) = g (x - mean) / sigma + b has the Jacobian
//       (1/sigma) diag(g) (I - 11^T/d - y y^T/d), y the normalized x, so its size goes like
//       1/sigma = sqrt(d)/|x - mean|: a grown LN input passes back a smaller gradient, and in Post-LN
//       every gradient that reaches a lower layer has passed through every LN above it;
//   (4) the lower layers stop learning and the model stays near the uniform loss.
// Every step records (each a mean over the step's batch; "step t" = the t-th update, 1-based):
//   loss            the training batch's loss before update t
//   grad per layer  |dL/dW| (Frobenius norm over every parameter of the group) before update t, for the
//                   input embedding (tok_emb and pos_emb), each block, and the output (ln_f and head)
//   LN input RMS    sqrt(mean x^2) of the input x of every LN of the residual stream: post and deepnorm
//                   the sums x + F(x) (alpha x + F(x)) entering ln1, ln2; pre and peri the stream entering
//                   ln1, ln2 and ln_f (peri's output norms LNa, LNm are not traced); rezero has none
//   LN gain         |dL/d input| / |dL/d output| of the same LNs, measured from the backward pass (only
//                   the part of dL/d input that came through the LN, not through a skip path); the
//                   Jacobian above predicts at most about |g|/sigma, printed beside it as 1/RMS(input)
//   output move     RMS over the probe batch of logits(after update t) - logits(before update t), on a
//                   fixed held-out probe batch
//   update ratio    |W after update t - W before| / |W before| per group: the embedding, each block's
//                   attention, MLP and rest (norms, residual scalars), the output (steps.csv only)
//   attention entropy  of each head's weights in the forward pass before update t, mean over the batch
//                   and query positions (steps.csv only)
//   attention logit of each head, the largest |q.k|/sqrt(dh) over the batch and the unmasked pairs, in
//                   the same forward pass (steps.csv; the plot att_logit_max shows the max over heads)
//   log Z, logit RMS  of the output logits of the same forward pass: the mean and max over positions of
//                   log Z = logsumexp of the logits, and their RMS (steps.csv; plots log_z and logit_rms)
//   collapse        per block, of the same forward pass (analysis/collapse.hpp): the mean cosine between
//                   the positions of a sequence in its output, and the share of that output's energy in
//                   its top singular direction; per branch (attention, MLP) the share of its energy that
//                   every position shares, and rms(branch)/rms(skip); the share of FFN units that fire at
//                   no position of the batch (dead); the attention entropy over its uniform maximum, mean
//                   over the heads. NaN where undefined: a share of a branch that is 0 (rezero at init),
//                   cosines and entropies at --seq 1. The top direction's share only at steps
//                   1..--early-window, every tenth step and the table's steps, NaN at the others (the
//                   collapse table at steps 1, 5, 30 and the last; steps.csv; plots out_cosine,
//                   dead_units, att_entropy_share; explorer charts per block)
// and, for the early-window table (steps 1..--early-window; steps.csv has every step):
//   spectral ratio  ||W after update t - W before||_2 / ||W before||_2 (largest singular values, by power
//                   iteration), the max over the 2-D weights of each block's attention and of its MLP
//   loss change     actual dL = L(W + d) - L(W) on step t's own training batch (one more forward pass
//                   after update t) and its linear prediction g . d (g the gradient of that batch's loss
//                   at W, before clipping; d the update taken); actual/predicted near 1: the loss is
//                   locally linear over the step; far from 1 or negative: the step left that region
//                   (with --intervene, g is the altered backward's, not the loss's gradient)
//   token share     of the head input (ln_f's output, or the last block's output without ln_f) on the
//                   probe batch, before update t: between-token-group variance over total variance,
//                   summed over the model dimension (1: a function of the input token alone)
//
// The defaults are the warmup grid's model and corpus (6 layers, d 32, the Markov corpus, Adam(0.9, 0.98))
// at lr 1e-2: in warmup's default grid the smallest learning rate at which Post-LN without warmup ends
// stuck at the unigram loss while 100 warmup steps let it train, and Pre-LN trains either way.
//
//   build/bin/dynamics                                         defaults: post and pre, lr 1e-2
//   build/bin/dynamics --placements post,pre,deepnorm --lr 3e-3 --steps 500 --seeds 3
#include <map>

#include "experiments/lib/experiment.hpp"
#include "analysis/collapse.hpp"
#include "analysis/step_measures.hpp"
#include "analysis/stream_split.hpp"
#include "experiments/lib/interrupt.hpp"

// A step's measures as JSON, for a run's steps in a shard (step_measures.hpp has none of its own).
namespace gs::analysis {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StepRecord, loss, lr, grad_norm, output_move, layer_grad, ln_rms, ln_gain, update_ratio,
                                   att_entropy, att_logit_max, log_z_mean, log_z_max, logit_rms, spectral_ratio, loss_change,
                                   loss_linear, token_share, out_cosine, out_top_share, attn_shared, mlp_shared,
                                   attn_branch_skip, mlp_branch_skip, dead_units, att_entropy_share)
}  // namespace gs::analysis

namespace {

struct DynamicsOptions : TrainingOptions {  // --steps 300 --eval-batches 20 --clip 0 --margin 0.05
  std::vector<std::size_t> warmups = {0, 100};
  double lr = 1e-2;
  std::size_t early = 10;  // link (1): the "first steps" window
  std::size_t early_window = 30;  // the early-window table: steps 1..early_window
  nn::CorpusOptions corpus;  // --text (empty: the Markov corpus), --markov-order, --markov-concentration
  OptimizerSetup opt;  // Adam(0.9, 0.98, eps 1e-8) unless the flags say otherwise
};

// ---- one run ----

struct RunKey {
  std::string placement;
  std::size_t warmup;
  auto operator<=>(const RunKey&) const = default;
};

// What one run measured: its steps (step_measures.hpp), the held-out loss after the last and the verdict.
struct DynamicsRun {
  std::vector<StepRecord> steps;  // ends at the first NaN/Inf loss
  double final_loss = NAN;        // held-out, after the last step
  Verdict verdict = Verdict::diverged;
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DynamicsRun, steps, final_loss, verdict)

// The early-window measures of the update just taken (d = W now - W before): its spectral size per
// block, and the loss change on the step's own batch, L(W + d) - L(W) (one more forward pass), against
// the linear prediction g . d.
void measure_update(nn::TransformerLM& model, const nn::Batch& batch, const std::vector<Array>& before,
                    const std::vector<Array>& grads, double loss_before, SpectralStarts& starts, StepRecord& r) {
  r.spectral_ratio = spectral_update_ratios(before, model, &starts);
  r.loss_linear = linear_change(grads, before, model);
  r.loss_change = loss_now(model, batch) - loss_before;
}

// The steps of the collapse table: 1, 5, 30 and the last, those the run has.
std::vector<std::size_t> collapse_steps(const DynamicsOptions& o) {
  std::vector<std::size_t> shown;
  for (std::size_t t : {std::size_t{1}, std::size_t{5}, std::size_t{30}, o.steps})
    if (t <= o.steps && (shown.empty() || t > shown.back())) shown.push_back(t);
  return shown;
}

// The steps t (1-based) at which the collapse measures include the top direction's share, the one with
// an eigendecomposition per sequence and block: every step of the early window, every tenth step after
// it, and the collapse table's. With it at every step the collapse measures add about 17% to the
// default run's time, with these steps 5 to 9%.
bool top_share_at(std::size_t t, const DynamicsOptions& o) {
  const std::vector<std::size_t> shown = collapse_steps(o);
  return t <= o.early_window || t % 10 == 0 || std::find(shown.begin(), shown.end(), t) != shown.end();
}

// The explorer page's charts of one step's output move, largest attention logit and log Z.
void chart_step(explorer::Run& run, std::size_t step, const StepRecord& r) {
  run.declare_chart({"output_move", "output move", "RMS over the probe batch of logits after the update "
                     "minus logits before it (dynamics' link 1).", "RMS", true});
  run.add_point("output_move", "logits", step, r.output_move);
  run.declare_chart({"att_logit_max", "largest attention logit", "The largest |q.k|/sqrt(dh) of any head in "
                     "the step's forward pass (attention-logit growth).", "|logit|", true});
  run.add_point("att_logit_max", "max over heads", step,
                *std::max_element(r.att_logit_max.begin(), r.att_logit_max.end()));
  run.declare_chart({"log_z", "log Z of the output", "log Z = logsumexp of the output logits, mean and max "
                     "over the step's positions (what the z-loss holds near 0).", "log Z", false});
  run.add_point("log_z", "mean", step, r.log_z_mean);
  run.add_point("log_z", "max", step, r.log_z_max);
  explorer::chart_collapse(run, step, r.out_cosine, r.dead_units, r.att_entropy_share);
}

// One run. With --html, the first seed's run is recorded for the explorer page.
DynamicsRun run_one(ModelOptions m, std::size_t warmup, const nn::Corpus& corpus, const DynamicsOptions& o, Tick& tick,
               Experiment& ex, const Cell& cell) {
  m.vocab = corpus.data.vocab();
  nn::TransformerLM model(m.config());
  const auto rec = cell["seed"] == 0 ? ex.recorder(cell.grid->describe(cell.index), model) : nullptr;
  const std::unique_ptr<nn::Optimizer> optimizer = o.opt.make(model);
  const nn::Schedule schedule = o.opt.with_hold({nn::ScheduleKind::warmup, o.lr, warmup, o.steps, 0.1});
  std::mt19937_64 probe_rng = nn::rng_for(m.seed, 0, nn::RngPurpose::probe);
  const nn::Batch probe = corpus.data.batch(nn::Split::validation, m.batch, m.seq, probe_rng);
  Tape::current().keep_contributions = true;  // for through_norm (this thread's tape)
  ProbePass before = probe_pass(model, probe);
  std::vector<StepRecord> steps;
  SpectralStarts starts;  // warm starts of the power iterations, from one step to the next
  for (std::size_t step = 0; step < o.steps; ++step) {
    stop_if_requested(step);  // SIGINT/SIGTERM: stop between steps (interrupt.hpp)
    StepRecord r;
    const nn::Batch batch = nn::training_batch(corpus.data, m.batch, m.seq, m.seed, step);
    r.loss = nn::forward_backward(model, batch);
    if (!std::isfinite(r.loss)) {
      refuse_first_step({r.loss, NAN, 0.0}, step, o.opt.loss_term_flag());
      break;
    }
    read_tape(model, r);
    read_collapse(model, r, top_share_at(step + 1, o));
    r.token_share = before.token_share;
    const double loss_before = last_loss(model);
    if (rec) rec->record_pass(step, Tape::current(), r.loss);
    const std::vector<Array> weights_before = parameter_values(model), grads = parameter_grads(model);
    const nn::Update u = nn::apply_update(*optimizer, schedule, step, o.clip);
    if (!u.taken()) {  // the gradient overflowed: no weight moved, and the run stops as for a NaN loss
      refuse_first_step({r.loss, u.grad_norm, u.lr}, step, o.opt.loss_term_flag());
      break;
    }
    r.update_ratio = update_ratios(weights_before, model);
    if (rec) rec->record_update(step);
    measure_update(model, batch, weights_before, grads, loss_before, starts, r);
    r.lr = u.lr, r.grad_norm = u.grad_norm;
    ProbePass after = probe_pass(model, probe);
    r.output_move = rms(after.logits - before.logits);
    if (rec) chart_step(rec->run(), step, r);
    before = std::move(after);
    char what[96];
    std::snprintf(what, sizeof what, "loss %.4f lr %.2e |g| %.3f", r.loss, r.lr, r.grad_norm);
    tick(1, what);
    steps.push_back(std::move(r));
  }
  Tape::current().keep_contributions = false;
  const double final_loss = steps.size() == o.steps ? nn::evaluate(model, corpus.data, m.batch, m.seq, o.eval_batches, m.seed) : NAN;
  const Verdict verdict = verdict_of(final_loss, Thresholds{corpus.uniform, corpus.unigram, o.margin});
  if (rec) {
    rec->run().facts = {{"program", "dynamics"}, {"run", cell.grid->describe(cell.index)}, {"data", corpus.name},
                        {"held-out loss", fmt(final_loss)}, {"verdict", to_string(verdict)}};
    ex.add_run(cell.index, rec->take());
  }
  return {std::move(steps), final_loss, verdict};
}

using Runs = std::map<RunKey, std::vector<DynamicsRun>>;  // one run per seed, in the order the tables print them

Runs runs_of(const std::vector<DynamicsRun>& cells, const Grid& grid, const DynamicsOptions& o) {
  Runs runs;
  for (std::size_t p = 0; p < grid.labels(0).size(); ++p)
    for (std::size_t w = 0; w < o.warmups.size(); ++w)
      for (const DynamicsRun* r : seeds_of(cells, grid, {p, w})) runs[{grid.labels(0)[p], o.warmups[w]}].push_back(*r);
  return runs;
}

// ---- summaries: one number per link of the chain ----

// A per-step quantity, read from a step record: a number of it, or the mean, largest or smallest value
// over the sites of one of its lists (NaN where the step has none: rezero has no LN).
using Field = std::function<double(const StepRecord&)>;
using Sites = std::vector<double> StepRecord::*;
Field value(double StepRecord::*x) { return [x](const StepRecord& r) { return r.*x; }; }
Field mean_over(Sites x) { return [x](const StepRecord& r) { return mean_of(r.*x); }; }
Field max_over(Sites x) {
  return [x](const StepRecord& r) { return (r.*x).empty() ? NAN : *std::ranges::max_element(r.*x); };
}
Field min_over(Sites x) {
  return [x](const StepRecord& r) { return (r.*x).empty() ? NAN : *std::ranges::min_element(r.*x); };
}

const Field train_loss = value(&StepRecord::loss), output_move = value(&StepRecord::output_move),
            log_z_mean = value(&StepRecord::log_z_mean), logit_rms = value(&StepRecord::logit_rms),
            token_share_of = value(&StepRecord::token_share);
const Field ln_rms = mean_over(&StepRecord::ln_rms), ln_gain = mean_over(&StepRecord::ln_gain);
const Field att_logit_max = max_over(&StepRecord::att_logit_max), spectral_max = max_over(&StepRecord::spectral_ratio);
const Field att_entropy_min = min_over(&StepRecord::att_entropy);
// The LN gain the Jacobian predicts (about |g|/sigma, the header), as 1/RMS(input): the mean over the LNs.
const Field inv_rms = [](const StepRecord& r) {
  std::vector<double> inv;
  for (double x : r.ln_rms) inv.push_back(1.0 / x);
  return mean_of(inv);
};
// The gradient norm of the lowest block (or of the embedding) over that of the top block.
const Field grad_ratio = [](const StepRecord& r) { return r.layer_grad[1] / r.layer_grad[r.layer_grad.size() - 2]; };
const Field emb_ratio = [](const StepRecord& r) { return r.layer_grad.front() / r.layer_grad[r.layer_grad.size() - 2]; };
// actual / predicted loss change of the step: 1 where the loss is linear over it
const Field loss_ratio = [](const StepRecord& r) { return r.loss_change / r.loss_linear; };
// The early window's fields. Block i's relative update and spectral ratio: the max over its attention
// and its MLP (update_ratio groups 1 + 3i, 2 + 3i; spectral_ratio groups 2i, 2i + 1).
Field block_update(std::size_t i) {
  return [i](const StepRecord& r) { return std::max(r.update_ratio.at(1 + 3 * i), r.update_ratio.at(2 + 3 * i)); };
}
Field block_spectral(std::size_t i) {
  return [i](const StepRecord& r) {
    return r.spectral_ratio.empty() ? NAN : std::max(r.spectral_ratio.at(2 * i), r.spectral_ratio.at(2 * i + 1));
  };
}

// The collapse table's fields: entry i of a per-block list (NaN where the model has no block i), the
// top block's (the last entry), and the mean over the blocks.
Field block_entry(Sites x, std::size_t i) {
  return [x, i](const StepRecord& r) { return i < (r.*x).size() ? (r.*x)[i] : NAN; };
}
Field top_entry(Sites x) {
  return [x](const StepRecord& r) { return (r.*x).empty() ? NAN : (r.*x).back(); };
}
const Field top_cosine = top_entry(&StepRecord::out_cosine), dead_units_mean = mean_over(&StepRecord::dead_units),
            top_entropy_share = top_entry(&StepRecord::att_entropy_share);

// A number from one seed's run; NaN where the run did not get far enough.
using Measure = std::function<double(const DynamicsRun&)>;

// f at step t (1-based).
Measure at(std::size_t t, Field f) {
  return [=](const DynamicsRun& run) -> double { return t >= 1 && t <= run.steps.size() ? f(run.steps[t - 1]) : NAN; };
}
// The max (min) of f over steps 1..t; the min as -(the max of -f).
Measure max_to(std::size_t t, Field f, double sign = 1.0) {
  return [=](const DynamicsRun& run) -> double {
    double m = NAN;
    for (std::size_t i = 0; i < std::min(t, run.steps.size()); ++i)
      m = std::isnan(m) ? sign * f(run.steps[i]) : std::max(m, sign * f(run.steps[i]));
    return sign * m;
  };
}
Measure min_to(std::size_t t, Field f) { return max_to(t, f, -1.0); }
// The mean of f over the last n of `steps` steps, for a run that got to the end.
Measure last(std::size_t n, std::size_t steps, Field f) {
  return [=](const DynamicsRun& run) -> double {
    if (run.steps.size() < steps) return NAN;
    double s = 0.0;
    for (std::size_t i = steps - n; i < steps; ++i) s += f(run.steps[i]);
    return s / static_cast<double>(n);
  };
}
Measure ratio(Measure a, Measure b) {
  return [=](const DynamicsRun& run) -> double { return a(run) / b(run); };
}

// The statistic of a measure over the seeds of one run ("-" if it does not apply, e.g. rezero's LNs).
std::string over_seeds(const std::vector<DynamicsRun>& traces, const Measure& m, int digits = 3) {
  std::vector<double> v;
  for (const DynamicsRun& t : traces) v.push_back(m(t));
  if (std::all_of(v.begin(), v.end(), [](double x) { return std::isnan(x); })) return "-";
  return fmt(stat_of(v), digits);
}

std::string run_label(const RunKey& k) { return k.placement + ", warmup " + std::to_string(k.warmup); }

// A table with a row per run and a column per measure (then the verdicts, if asked); printed, and
// written as DIR/NAME.csv.
void emit(const Runs& runs, const std::string& heading, std::vector<std::string> columns,
          const std::vector<Measure>& measures, const std::filesystem::path& dir, const std::string& name,
          int digits = 3, bool with_verdicts = false) {
  columns.insert(columns.begin(), "run");
  if (with_verdicts) columns.push_back("verdict");
  Table t(columns);
  for (const auto& [k, tr] : runs) {
    std::vector<std::string> row = {run_label(k)};
    for (const Measure& m : measures) row.push_back(over_seeds(tr, m, digits));
    if (with_verdicts) {
      std::vector<Verdict> verdicts;
      for (const DynamicsRun& t : tr) verdicts.push_back(t.verdict);
      row.push_back(verdict_text(verdicts));
    }
    t.add_row(row);
  }
  std::printf("\n%s\n\n%s", heading.c_str(), t.to_text().c_str());
  t.write_csv(dir / (name + ".csv"));
}

void link_tables(const Runs& runs, const nn::Corpus& corpus, const DynamicsOptions& o, const std::filesystem::path& dir) {
  const std::size_t n = o.steps, e = std::min(o.early, n), k = std::max<std::size_t>(1, n / 10);
  const std::string early = "steps 1-" + std::to_string(e), end = "last " + std::to_string(k);

  emit(runs, "link 1, a large early update: RMS change of the probe logits per update",
       {"move step 1", "max move " + early, "max move, all steps", "move " + end},
       {at(1, output_move), max_to(e, output_move), max_to(n, output_move), last(k, n, output_move)}, dir,
       "link1_output_move");

  emit(runs, "link 2, LN inputs grow: RMS of the LN inputs (mean over the LNs)",
       {"LN-in RMS step 1", "step " + std::to_string(e), "max", "growth max/step1", end},
       {at(1, ln_rms), at(e, ln_rms), max_to(n, ln_rms), ratio(max_to(n, ln_rms), at(1, ln_rms)), last(k, n, ln_rms)},
       dir, "link2_ln_input_rms");

  emit(runs,
       "link 3, gradients vanish: |dL/dW| of the lowest block (and of the embedding) over the top block's; measured "
       "LN gain |dL/d in|/|dL/d out| (mean over the LNs) beside the Jacobian's 1/RMS(input)",
       {"block0/top step 1", "block0/top " + end, "min block0/top", "emb/top step 1", "emb/top " + end,
        "LN gain step 1", "1/RMS step 1", "LN gain " + end, "1/RMS " + end},
       {at(1, grad_ratio), last(k, n, grad_ratio), min_to(n, grad_ratio), at(1, emb_ratio), last(k, n, emb_ratio),
        at(1, ln_gain), at(1, inv_rms), last(k, n, ln_gain), last(k, n, inv_rms)},
       dir, "link3_gradients");

  const Measure held_out = [](const DynamicsRun& r) { return r.final_loss; };
  const Measure minus_uniform = [&](const DynamicsRun& r) { return r.final_loss - corpus.uniform; };
  const Measure minus_unigram = [&](const DynamicsRun& r) { return r.final_loss - corpus.unigram; };
  emit(runs,
       "link 4, stuck near the uniform loss: log V = " + fmt(corpus.uniform) + ", unigram H1 = " + fmt(corpus.unigram) +
           (std::isnan(corpus.floor) ? "" : ", entropy-rate floor " + fmt(corpus.floor)) +
           "; verdict: diverged above log V + " + fmt(o.margin) + ", stuck above H1 - " + fmt(o.margin),
       {"train loss step 1", "train loss " + end, "held-out loss", "- log V", "- H1"},
       {at(1, train_loss), last(k, n, train_loss), held_out, minus_uniform, minus_unigram}, dir, "link4_loss", 4, true);
}

// ---- per-step CSV and plots ----

// f per step averaged over the seeds, up to the shortest seed's run.
Series mean_curve(const std::vector<DynamicsRun>& traces, const Field& f, std::string title) {
  std::size_t len = traces.front().steps.size();
  for (const DynamicsRun& t : traces) len = std::min(len, t.steps.size());
  Series s{std::move(title), {}, {}, {}};
  for (std::size_t i = 0; i < len; ++i) {
    double sum = 0.0;
    for (const DynamicsRun& t : traces) sum += f(t.steps[i]);
    s.x.push_back(static_cast<double>(i + 1));
    s.y.push_back(sum / static_cast<double>(traces.size()));
  }
  return s;
}

void draw_runs(const Runs& runs, const Field& f, const std::string& title, const std::string& ylabel, bool log_y,
               const std::filesystem::path& dir, const std::string& name, std::vector<Series> extra = {}) {
  Plot plot{title, "step", ylabel, false, log_y, {}};
  for (const auto& [k, tr] : runs) {
    Series s = mean_curve(tr, f, run_label(k));
    if (!s.x.empty() && !std::isnan(s.y.front())) plot.series.push_back(std::move(s));  // rezero has no LN
  }
  for (Series& s : extra)
    if (!s.x.empty()) plot.series.push_back(std::move(s));
  if (!plot.series.empty()) draw(plot, dir, name);  // e.g. no LN plot when every run is rezero
}

std::string file_label(const RunKey& k) { return file_part(k.placement) + "_w" + std::to_string(k.warmup); }

// Per run: the gradient norm of every layer, and the input RMS of every LN, against the step.
void draw_per_run(const RunKey& k, const std::vector<DynamicsRun>& tr, std::size_t layers,
                  const std::vector<std::string>& ln_names, const std::filesystem::path& dir) {
  const std::vector<std::string> names = layer_names(layers);
  if (mean_curve(tr, ln_rms, "").x.empty()) return;  // a seed diverged at step 1: nothing to draw
  // A log-scale plot of one list of the steps (a value per layer, per LN), a line per element.
  const auto draw_each = [&](const std::string& title, const std::string& ylabel, std::vector<double> StepRecord::*list,
                             const std::vector<std::string>& labels, const std::string& file) {
    Plot plot{run_label(k) + ": " + title, "step", ylabel, false, true, {}};
    for (std::size_t j = 0; j < labels.size(); ++j)
      plot.series.push_back(mean_curve(tr, [j, list](const StepRecord& r) { return (r.*list)[j]; }, labels[j]));
    draw(plot, dir, file + file_label(k));
  };
  draw_each("|dL/dW| per layer", "gradient norm (log scale)", &StepRecord::layer_grad, names, "grads_");
  if (!ln_names.empty())
    draw_each("RMS of each LN's input", "RMS (log scale)", &StepRecord::ln_rms, ln_names, "ln_input_");
}

std::vector<std::string> ln_names_of(const ModelOptions& mo, const std::string& placement) {
  ModelOptions m = mo;
  m.placement = placement;
  nn::TransformerLM model(m.config());
  IndexArray ids = IndexArray::from_shape({1, 1});
  ids(0, 0) = 0;
  Tape::current().reset();
  model.logits(ids);
  std::vector<std::string> names;
  for (const nn::NormTrace& s : stream_norm_traces(model)) names.push_back(s.name);
  Tape::current().reset();
  return names;
}

// steps.csv: one row per (run, seed, step) with every measurement.
void write_steps_csv(const Runs& runs, const ModelOptions& mo, unsigned seed0, const std::filesystem::path& dir) {
  std::vector<std::string> ln_cols, heads;  // the LN columns: those of the placement with the most LNs
  for (const auto& [k, tr] : runs) {
    const std::vector<std::string> names = ln_names_of(mo, k.placement);
    if (names.size() > ln_cols.size()) ln_cols = names;
  }
  for (std::size_t b = 0; b < mo.layers; ++b)
    for (std::size_t h = 0; h < mo.heads; ++h) heads.push_back("b" + std::to_string(b) + "h" + std::to_string(h));
  std::vector<std::string> cols = {"placement", "warmup", "seed", "step", "loss", "lr", "grad_norm", "output_move"};
  const auto add = [&](const std::string& prefix, const std::vector<std::string>& names) {
    for (const std::string& n : names) cols.push_back(prefix + n);
  };
  add("grad_", layer_names(mo.layers)), add("ln_in_rms_", ln_cols), add("ln_gain_", ln_cols);
  add("update_ratio_", update_group_names(mo.layers)), add("att_entropy_", heads), add("att_logit_max_", heads);
  add("", {"log_z_mean", "log_z_max", "logit_rms"}), add("spectral_ratio_", spectral_group_names(mo.layers));
  // loss_change = L(W + d) - L(W) on the step's batch, loss_linear = g . d, loss_ratio = their ratio
  add("", {"loss_change", "loss_linear", "loss_ratio", "token_share"});
  std::vector<std::string> blocks;  // the collapse measures: a column per block, "out_cosine_b0", ...
  for (std::size_t b = 0; b < mo.layers; ++b) blocks.push_back("b" + std::to_string(b));
  for (const char* list : {"out_cosine_", "out_top_share_", "attn_shared_", "mlp_shared_", "attn_branch_skip_",
                           "mlp_branch_skip_", "dead_units_", "att_entropy_share_"})
    add(list, blocks);
  Table t(cols);
  for (const auto& [k, tr] : runs)
    for (std::size_t s = 0; s < tr.size(); ++s)
      for (std::size_t i = 0; i < tr[s].steps.size(); ++i) {
        const StepRecord& r = tr[s].steps[i];
        std::vector<std::string> row = {k.placement, std::to_string(k.warmup), std::to_string(seed0 + s),
                                        std::to_string(i + 1)};
        const auto put = [&](const std::vector<double>& v) { for (double x : v) row.push_back(fmt(x, 7)); };
        const auto put_ln = [&](const std::vector<double>& v) {  // padded with "" (rezero has no LN)
          for (std::size_t j = 0; j < ln_cols.size(); ++j) row.push_back(j < v.size() ? fmt(v[j], 7) : "");
        };
        put({r.loss, r.lr, r.grad_norm, r.output_move}), put(r.layer_grad), put_ln(r.ln_rms), put_ln(r.ln_gain);
        put(r.update_ratio), put(r.att_entropy), put(r.att_logit_max), put({r.log_z_mean, r.log_z_max, r.logit_rms});
        put(r.spectral_ratio), put({r.loss_change, r.loss_linear, loss_ratio(r), r.token_share});
        put(r.out_cosine), put(r.out_top_share), put(r.attn_shared), put(r.mlp_shared), put(r.attn_branch_skip);
        put(r.mlp_branch_skip), put(r.dead_units), put(r.att_entropy_share);
        t.add_row(row);
      }
  t.write_csv(dir / "steps.csv");
}

void plots(const Runs& runs, const nn::Corpus& corpus, const ModelOptions& mo, const DynamicsOptions& o,
           const std::filesystem::path& dir) {
  const double n = static_cast<double>(o.steps);
  draw_runs(runs, train_loss, "training loss", "loss (nats)", false, dir, "loss",
            {flat_line("uniform log V", 1, n, corpus.uniform), flat_line("unigram H1", 1, n, corpus.unigram)});
  draw_runs(runs, output_move, "output move: RMS change of the probe logits per update", "RMS change (log scale)", true,
            dir, "output_move");
  draw_runs(runs, ln_rms, "RMS of the LN inputs, mean over the LNs", "RMS (log scale)", true, dir, "ln_input_rms");
  draw_runs(runs, att_logit_max, "largest |attention logit| over blocks and heads", "|q.k|/sqrt(dh) (log scale)", true,
            dir, "att_logit_max");
  draw_runs(runs, log_z_mean, "mean log Z of the output logits", "log Z", false, dir, "log_z");
  draw_runs(runs, logit_rms, "RMS of the output logits", "RMS (log scale)", true, dir, "logit_rms");
  draw_runs(runs, grad_ratio, "|dL/dW| of block 0 over |dL/dW| of the top block", "ratio (log scale)", true, dir,
            "grad_ratio");
  std::vector<Series> predicted;
  for (const auto& [k, tr] : runs)
    if (!tr.front().steps.empty() && !tr.front().steps.front().ln_rms.empty())
      predicted.push_back(mean_curve(tr, inv_rms, run_label(k) + ": 1/RMS(input)"));
  draw_runs(runs, ln_gain, "LN gain |dL/d in|/|dL/d out| and 1/RMS(input), mean over the LNs",
            "gain (log scale)", true, dir, "ln_gain", predicted);
  draw_runs(runs, top_cosine, "mean cosine between the positions of the top block's output", "cosine", false, dir,
            "out_cosine");
  draw_runs(runs, dead_units_mean, "share of FFN units that fire at no position, mean over the blocks", "share",
            false, dir, "dead_units");
  draw_runs(runs, top_entropy_share, "the top block's attention entropy over its uniform maximum", "share", false,
            dir, "att_entropy_share");
  for (const auto& [k, tr] : runs) draw_per_run(k, tr, mo.layers, ln_names_of(mo, k.placement), dir);
}

// ---- the early window ----

// f at step t (1-based), the mean over the seeds whose run got that far and where f is finite; NaN if none.
double seed_mean(const std::vector<DynamicsRun>& traces, std::size_t t, const Field& f) {
  double sum = 0.0;
  std::size_t n = 0;
  for (const DynamicsRun& run : traces)
    if (t <= run.steps.size() && std::isfinite(f(run.steps[t - 1]))) sum += f(run.steps[t - 1]), ++n;
  return n ? sum / static_cast<double>(n) : NAN;
}

// The printed steps: 1, 2, 3, 5, 10, 20, 30, 50, 100, ... up to e, and e.
std::vector<std::size_t> shown_steps(std::size_t e) {
  std::vector<std::size_t> shown;
  for (std::size_t decade = 1; decade <= e; decade *= 10)
    for (std::size_t m : {1, 2, 3, 5})
      if (m * decade <= e) shown.push_back(m * decade);
  if (e > 0 && shown.back() != e) shown.push_back(e);
  return shown;
}

// A row per run and step 1..--early-window (printed at shown_steps, every step in early_window.csv).
void early_window_table(const Runs& runs, const nn::Corpus& corpus, const ModelOptions& mo, const DynamicsOptions& o,
                        const std::filesystem::path& dir) {
  const std::size_t e = std::min(o.early_window, o.steps), top = mo.layers - 1;
  const std::vector<std::string> cols = {"run", "step", "loss", "upd b0", "upd top", "spec b0", "spec top",
                                         "dL/lin", "LN-in RMS", "token share", "min att H"};
  const std::vector<Field> fields = {train_loss, block_update(0), block_update(top), block_spectral(0),
                                     block_spectral(top), loss_ratio, ln_rms, token_share_of, att_entropy_min};
  const std::vector<std::size_t> shown = shown_steps(e);
  Table printed(cols), every(cols);
  for (const auto& [k, tr] : runs)
    for (std::size_t t = 1; t <= e; ++t) {
      std::vector<std::string> row = {run_label(k), std::to_string(t)};
      for (const Field& f : fields) {
        const double y = seed_mean(tr, t, f);
        row.push_back(std::isnan(y) ? "-" : fmt(y, 3));
      }
      if (std::find(shown.begin(), shown.end(), t) != shown.end()) printed.add_row(row);
      every.add_row(row);
    }
  const double chance = static_cast<double>(corpus.data.vocab() - 1) / static_cast<double>(mo.batch * mo.seq - 1);
  std::printf(
      "\nearly window, steps 1-%zu, mean over the seeds: upd = |dW|/|W| (Frobenius), spec = ||dW||_2/||W||_2 (largest "
      "singular values), each the max over the block's attention and MLP, for block 0 and the top block; "
      "dL/lin = (L(W + d) - L(W)) / (g . d) on the step's batch (1: the loss is linear over the step); LN-in RMS "
      "(mean over the LNs); token share of the head input's variance on the probe batch (a representation that "
      "ignores the token scores about (K - 1)/(N - 1) <= %s); min att H: the lowest attention entropy over the heads "
      "(nats)\n\n%s",
      e, fmt(chance, 3).c_str(), printed.to_text().c_str());
  every.write_csv(dir / "early_window.csv");
}

// A row per run at each of collapse_steps, mean ± sd over the seeds.
void collapse_table(const Runs& runs, const DynamicsOptions& o, const std::filesystem::path& dir) {
  const std::vector<std::size_t> shown = collapse_steps(o);
  const std::vector<std::string> cols = {"run", "step", "cos top", "cos b1", "top dir top", "H share top",
                                         "dead units", "attn/skip", "mlp/skip"};
  const std::vector<Field> fields = {top_cosine, block_entry(&StepRecord::out_cosine, 1),
                                     top_entry(&StepRecord::out_top_share), top_entropy_share, dead_units_mean,
                                     mean_over(&StepRecord::attn_branch_skip), mean_over(&StepRecord::mlp_branch_skip)};
  Table t(cols);
  for (const auto& [k, tr] : runs)
    for (std::size_t step : shown) {
      std::vector<std::string> row = {run_label(k), std::to_string(step)};
      for (const Field& f : fields) row.push_back(over_seeds(tr, at(step, f)));
      t.add_row(row);
    }
  std::printf(
      "\ncollapse of the positions, in the forward pass before update t: cos = the mean cosine between the positions "
      "of a sequence in a block's output (1: one direction at every position), for the top block and block 1; top "
      "dir = the share of the top block's output energy in its top singular direction (1: rank one); H share = the "
      "top block's attention entropy over its uniform maximum, mean over its heads (1: uniform attention); dead "
      "units = the share of FFN units that fire at no position of the batch, mean over the blocks; attn/skip, "
      "mlp/skip = rms(branch) / rms(skip), mean over the blocks\n\n%s",
      t.to_text().c_str());
  t.write_csv(dir / "collapse.csv");
}

// Against the step on a log axis (the early window spread out), the mean over the seeds per run: the
// largest spectral update ratio over the blocks, the token share, and actual/predicted loss change.
void early_plots(const Runs& runs, const std::filesystem::path& dir) {
  const std::vector<std::tuple<Field, std::string, std::string, bool, std::string>> plots = {
      {spectral_max, "spectral update ratio ||dW||_2/||W||_2, max over the blocks' attention and MLP",
       "ratio (log scale)", true, "spectral_ratio"},
      {token_share_of, "share of the head input's variance explained by the input token (probe batch)",
       "share", false, "token_share"},
      {loss_ratio, "actual / linear-predicted loss change of each update, on its batch", "ratio", false,
       "loss_ratio"}};
  for (const auto& [f, title, ylabel, log_y, name] : plots) {
    Plot plot{title, "step (log scale)", ylabel, true, log_y, {}};
    for (const auto& [k, tr] : runs) {
      Series s{run_label(k), {}, {}, {}};  // the steps where the seeds' mean is finite (and > 0 on a log axis)
      std::size_t len = 0;
      for (const DynamicsRun& run : tr) len = std::max(len, run.steps.size());
      for (std::size_t t = 1; t <= len; ++t) {
        const double y = seed_mean(tr, t, f);
        if (std::isfinite(y) && (!log_y || y > 0)) s.x.push_back(static_cast<double>(t)), s.y.push_back(y);
      }
      if (!s.x.empty()) plot.series.push_back(std::move(s));
    }
    if (!plot.series.empty()) draw(plot, dir, name);
  }
}

void run(Experiment& ex, DynamicsOptions& o) {
  const ModelOptions& mo = ex.model;
  keep_first_of_each(o.warmups);
  nn::ModelConfig largest = mo.config();
  largest.vocab = o.corpus.text.empty() ? mo.vocab : 256;
  const std::size_t runs = ex.placements.size() * o.warmups.size() * ex.seeds;
  ex.check_memory(largest, 2, true, runs, nn::corpus_bytes(o.corpus, mo.vocab));
  const nn::Corpus corpus = nn::build_corpus(o.corpus, mo.vocab, mo.seed, mo.seq);
  check_margin(corpus, o.margin);  // before any run: a margin that leaves no verdict is refused
  std::printf(
      "dynamics: %s (vocab %zu); layers %zu, d_model %zu, heads %zu, batch %zu x seq %zu; %s, "
      "lr %g, linear warmup then constant, clip %s; %zu steps; seeds %u..%zu\n",
      (o.corpus.text.empty() ? "markov order " + std::to_string(o.corpus.order) + ", concentration " + fmt(o.corpus.concentration)
                      : corpus.name).c_str(), corpus.data.vocab(), mo.layers, mo.d_model, mo.heads, mo.batch, mo.seq,
      o.opt.text() == OptimizerSetup{}.text() ? "Adam(0.9, 0.98)" : o.opt.text().c_str(), o.lr,
      o.clip > 0 ? fmt(o.clip).c_str() : "off", o.steps, mo.seed, mo.seed + ex.seeds - 1);
  std::printf(
      "each number: mean ± std over the seeds; 'step t' = the t-th update, 'last N' = mean over the last N steps\n");
  Grid grid;
  grid.axis("placement", ex.placements).axis("warmup", labels(o.warmups)).axis("seed", labels(ex.seed_list()));
  const auto cells = run_steps<DynamicsRun>(ex, grid, o.steps, [&](const Cell& c, Tick& tick) {
    return run_one(ex.cell_model(c), o.warmups[c["warmup"]], corpus, o, tick, ex, c);
  });
  if (!cells) return;
  const Runs traces = runs_of(*cells, grid, o);
  const std::filesystem::path dir = ex.out;
  link_tables(traces, corpus, o, dir);
  early_window_table(traces, corpus, mo, o, dir);
  collapse_table(traces, o, dir);
  write_steps_csv(traces, mo, mo.seed, dir);
  plots(traces, corpus, mo, o, dir);
  early_plots(traces, dir);
  std::printf(
      "\nwrote %s: steps.csv, link{1..4}_*.csv, early_window.csv, collapse.csv; plots loss, output_move, ln_input_rms, "
      "att_logit_max, log_z, logit_rms, grad_ratio, ln_gain, out_cosine, dead_units, att_entropy_share, grads_<run>, "
      "ln_input_<run>, spectral_ratio, token_share, loss_ratio (.png, .svg)\n",
      dir.string().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Experiment ex("dynamics", "Training dynamics of the first steps, per placement, with and without warmup: per-layer "
                "gradient norms, LN input RMS, LN gradient gain, output move per update, loss; checked link by link "
                "against Wang et al. 2022's account of the Post-LN failure.", "out/dynamics");
  ex.model = stability_model();
  ex.placements = {"post", "pre"};
  DynamicsOptions o;
  add_flag(ex.app, "--warmups", o.warmups, "linear-warmup lengths W in steps, 0: none (comma-separated)", Whole{0});
  add_flag(ex.app, "--lr", o.lr, "peak learning rate (Adam(0.9, 0.98); constant after the warmup)", RealRange::above(0));
  add_training_flags(ex.app, o, {"--steps", "--eval-batches", "--clip", "--margin"});
  describe(ex.app, "--steps", "training steps recorded");
  add_flag(ex.app, "--early", o.early, "link 1: the max output move is taken over steps 1..early", Whole{1});
  add_flag(ex.app, "--early-window", o.early_window, "the early-window table: steps 1..N (printed at 1, 2, 3, 5, 10, "
           "20, ..., N; every step in early_window.csv)", Whole{1});
  add_corpus_flags(ex.app, o.corpus, true);
  add_optimizer_flags(ex.app, o.opt, true);
  describe(ex.app, "--placements", "placements to train (comma-separated)");
  ex.check_flags = [&] { return o.warmups_below_steps(o.warmups); };
  ex.prints_time = true;
  return ex.main(argc, argv, [&] { run(ex, o); });
}
