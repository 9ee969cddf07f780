// causes: why Post-LN gets stuck without warmup, by intervention. At the learning rate where
// warmup's grid finds Post-LN without warmup stuck at the unigram loss and Pre-LN training (lr 1e-2 on
// the Markov corpus, docs/why-pre-ln.md), each row changes one thing in the failing run and trains
// every seed again from scratch, on both placements: on Post-LN a row that trains shows its change is
// sufficient to rescue it; on Pre-LN a row that gets stuck shows its change is enough to break it
// (the converse, imposing the mechanism). The rows:
//   none              Adam(0.9, 0.98, eps 1e-8), constant lr, no warmup: the failing run itself
//   frozen blocks     every block (and ln_f) keeps its initial weights: only the embeddings and the head
//                     learn. The baseline a "trained" run must beat (column "beat frozen")
//   ln-undo-gain ... freeze-ln   one backward-pass intervention in every block (nn/interventions.hpp):
//                     ln-undo-gain removes the 1/sigma of each LN's backward (the gradient vanishes
//                     through the LNs); ln-detach-stats makes the LN statistics constants;
//                     detach-skip / detach-branch send no gradient along the skip / the branch input of
//                     each residual add; freeze-ln keeps the LN gains and biases at init
//   clamp branch C xN every residual add receives its branch scaled down, per position, to at most C
//                     times its skip's RMS, for the first N steps (nn::BranchControl; a forward change,
//                     so the gradient is the clamped model's own): no branch can dominate its skip
//   scale branch K xN every branch times K for the first N steps: branch dominance imposed
//   warmup W: G       a linear warmup over W steps of parameter group G only (emb, lower, upper, head,
//                     norms; see Group), every other group at the full lr from step 0
//   lr xM for N       every update M times larger for the first N steps, then the lr: oversized early steps
//   reset G at S      at step S, the values of group G go back to their initial values (Adam's moments
//                     stay); "reset adam at S" zeroes Adam's moments and its step count instead
//   graft G at S      at step S, the values of group G become those of the same seed's "warmup W" run
//                     (W = --group-warmup) at step S (Adam's moments stay): does the warmup run's G unstick
//                     the stuck run?
//   to stuck: healthy P at S    transplants between the stuck run ("none") and the healthy run ("warmup W:
//   to healthy: stuck P at S    blocks", W = --group-warmup): at step S, part P of the recipient takes the
//                     donor's values at step S (its Adam moments stay), P one of fc1, fc2, fc1+fc2, ffn biases,
//                     qk, vo, norms, lower, upper, blocks (see Group), or "adam": every parameter's Adam
//                     moments, the values staying. Into the stuck run, a part that rescues it carries the stuck
//                     state's cure (sufficiency); into the healthy run, a part that sticks it carries the stuck
//                     state (it is enough to impose it)
//   rewarm W at S     from step S, every lr warms up again linearly over W steps (Adam's moments stay);
//                     "reset adam + rewarm W at S" zeroes the moments at S too: does a fresh warmup, from the
//                     stuck state, rescue?
//   beta2 B           Adam's beta2 = B (--adam-beta2, default 0.999) instead of 0.98
//   radam             rectified Adam (Liu et al. 2019): no adaptive step while its variance is intractable;
//                     "radam beta2 B" the same with beta2 B. Its rectification ramps the step over about
//                     2 / (1 - beta2) steps (100 at 0.98, 2000 at 0.999): compare with "warmup W" rows
//   sgd lr L          SGD with momentum 0.9 at lr L (--sgd-lr), alone and with ln-undo-gain: under SGD a
//                     gradient's scale is the step's scale, under Adam it is not (until |g| nears eps)
//   hold N            N steps at lr 0 that still update Adam's moments (--hold, default 20), then constant
//   warmup W          linear warmup of every parameter over W steps (--warmups, default 5, 20, 100)
// The columns: how many seeds trained / got stuck / diverged (warmup's verdicts,
// experiments/lib/training.hpp), how many beat the frozen-blocks row (final loss below the lowest of its
// seeds minus --margin), the final held-out loss (mean ± sd over the seeds), its gap to the entropy-rate
// floor over that of the frozen-blocks row (1: no better than frozen blocks; 0: at the floor), and what
// the change did to the gradients and updates:
//   g0/gL      |dL/dW| of block 0 over that of the top block, mean over the last --window steps
//   LN-in RMS  the RMS of each residual-stream LN's input (Post-LN: the sum x + f(x) entering it), mean
//              over the LNs and the last --window steps
//   LN gain    |dL/d in| / |dL/d out| through those LNs (the part of the input's gradient that came
//              through the LN), same means
//   b0 |g|/eps the median |gradient| of block 0's weights over Adam's eps, mean over the last --window
//              steps: far above 1, Adam's update g/(sqrt(v) + eps) does not depend on the gradient's scale
//   |dW|/|W|   the first update that moved the weights (the first step with lr > 0): the mean over every
//              parameter tensor with |W| > 0 of |W_after - W_before| / |W_before| (Frobenius norms)
// A second table, collapse, measures each run on a fixed held-out probe batch (analysis/collapse.hpp): the
// mean cosine between the positions of the top block's output after --collapse-step updates, after
// --reset-step updates and after the last (and 1 - cos then, its distance from one vector); at the end,
// block 1's, the dead-FFN-unit fraction (mean over blocks), the top block's attention entropy over its
// maximum, the entropy of the head's predictions (against the unigram entropy H1) and the KL divergence
// of the unigram distribution u from them, KL(u || p), the mean over positions (analysis::predictions).
// A measure over seeds ignores the seeds where it is not finite (a run that blew up; 0/0 where no
// gradient reaches the blocks); "-" when none is.
//
//   build/bin/causes                                      every row, post and pre, 5 seeds, 300 steps
//   build/bin/causes --rows "none,frozen blocks,clamp branch 1 x100" --placements post
//   build/bin/causes --markov-order 1 --vocab 64 --lr 3e-3  the same rows on another corpus and lr
#include <array>
#include <functional>

#include "experiments/lib/experiment.hpp"
#include "analysis/collapse.hpp"
#include "analysis/step_measures.hpp"
#include "nn/transformer_lm.hpp"

namespace {

struct CausesOptions : TrainingOptions {  // --steps 300 --eval-batches 20 --margin 0.05 --window 10
  double lr = 1e-2;
  std::vector<std::size_t> warmups = {5, 20, 100};
  std::size_t hold = 20;                // the hold row's N
  double beta2 = 0.999;                 // the beta2 rows' beta2
  double sgd_lr = 0.3;                  // the SGD rows' learning rate
  double clamp = 1.0;                   // the clamp row's C
  double branch_scale = 4.0;            // the scale row's K
  std::size_t control_steps = 100;      // N of the clamp and scale rows
  std::size_t group_warmup = 100;       // W of the per-group warmup rows
  double boost = 10.0;                  // M of the oversized-steps row
  std::size_t boost_steps = 5;          // its N
  std::size_t reset_step = 100;         // S of the reset, graft, transplant and rewarm rows
  std::size_t collapse_step = 5;        // the early step of the collapse table
  std::vector<std::string> rows;        // --rows: the rows to run, by name; empty: all
  nn::CorpusOptions corpus;
};

// The parameter groups a row can act on, for a model of L blocks:
//   emb    tok_emb, pos_emb                 head   head
//   lower  blocks 0 .. L/2 - 1 (whole)      upper  blocks L/2 .. L - 1 (whole)
//   norms  every norm's parameters (the blocks' and ln_f)
//   blocks every block and ln_f: all but emb and head
// and, finer, for the transplant rows (every block's):
//   fc1, fc2  the FFN's weight matrices W1, W2    fc1+fc2    both    ffn biases  b1, b2
//   qk     attention's Q and K (weights, biases)  vo  its V and O (weights, biases)
enum class Group { none, emb, lower, upper, blocks, head, norms, fc1, fc2, ffn, ffn_bias, qk, vo };
std::string name_of(Group g) {
  return std::array{"",      "emb", "lower",   "upper",      "blocks", "head", "norms",
                    "fc1",   "fc2", "fc1+fc2", "ffn biases", "qk",     "vo"}[static_cast<std::size_t>(g)];
}

// Whether the parameter of this name is in the group.
bool in_group(const std::string& name, Group group, std::size_t layers) {
  const bool block = name.starts_with("blocks."), ln_f = name.starts_with("ln_f.");
  const auto has = [&](const char* part) { return block && name.find(part) != std::string::npos; };
  switch (group) {
    case Group::none: return false;
    case Group::emb: return name.starts_with("tok_emb.") || name.starts_with("pos_emb.");
    case Group::head: return name.starts_with("head.");
    case Group::blocks: return is_block_parameter(name);
    case Group::norms: return ln_f || (block && name.find(".ln") != std::string::npos);
    case Group::lower:
    case Group::upper: return block && (2 * std::stoul(name.substr(7)) < layers) == (group == Group::lower);
    case Group::fc1: return has(".mlp.fc1.weight");
    case Group::fc2: return has(".mlp.fc2.weight");
    case Group::ffn: return has(".mlp.fc1.weight") || has(".mlp.fc2.weight");
    case Group::ffn_bias: return has(".mlp.fc1.bias") || has(".mlp.fc2.bias");
    case Group::qk: return has(".attn.q.") || has(".attn.k.");
    case Group::vo: return has(".attn.v.") || has(".attn.o.");
  }
  return false;
}

// What a row does to its group: keep it at init, reset it to init, or graft onto it the values of
// another run (its donor) at the same step; or, with no group, reset Adam's moments.
enum class GroupAct { none, freeze, reset, graft, reset_adam };

// Whose values a graft takes, at the step it happens, from the same seed's run of:
//   warmup   "warmup W", every parameter warmed up over W = --group-warmup steps
//   healthy  "warmup W: blocks", the blocks warmed up alone: the healthy run of the transplant rows
//   stuck    "none", the failing run itself
enum class Donor { warmup, healthy, stuck };

// A row: its name and what it changes in the "none" run.
struct Variant {
  std::string name;
  std::size_t warmup = 0;  // every parameter's linear warmup
  double lr = 0.0;         // the row's own learning rate (the SGD rows); 0: --lr
  OptimizerSetup optimizer{};
  Group warm_group = Group::none;  // a linear warmup of this group alone, over warm_steps steps
  std::size_t warm_steps = 0;
  GroupAct act = GroupAct::none;
  Group group = Group::none;    // the group it acts on
  std::size_t group_steps = 0;  // reset, graft: the step at which it happens
  Donor donor = Donor::warmup;  // graft: whose values
  bool graft_adam = false;      // graft: Adam's moments too (every parameter's), from the same donor
  std::size_t rewarm_at = 0, rewarm_steps = 0;  // from step rewarm_at, every lr warms up again over rewarm_steps
  nn::BranchControl branch{};   // on for the first branch_steps steps
  std::size_t branch_steps = 0;
  double boost = 1.0;           // lr times boost for the first boost_steps steps
  std::size_t boost_steps = 0;
};

// The run a donor names, as a row.
Variant donor_row(Donor d, const CausesOptions& o) {
  switch (d) {
    case Donor::warmup: return {.name = "warmup " + std::to_string(o.group_warmup), .warmup = o.group_warmup};
    case Donor::healthy:
      return {.name = "warmup " + std::to_string(o.group_warmup) + ": blocks", .warm_group = Group::blocks,
              .warm_steps = o.group_warmup};
    case Donor::stuck: return {.name = "none"};
  }
  return {};
}

// Every row, in table order; with `only` (--rows) given, just those it names.
std::vector<Variant> variants(const CausesOptions& o, const std::vector<std::string>& only) {
  using enum Group;
  std::vector<Variant> v = {{.name = "none"}, {.name = "frozen blocks", .act = GroupAct::freeze, .group = blocks}};
  for (const std::string& name : nn::intervention_names()) v.push_back({.name = name, .optimizer = {.intervene = {name}}});
  const std::string n = " x" + std::to_string(o.control_steps), at = " at " + std::to_string(o.reset_step);
  v.push_back({.name = "clamp branch " + label(o.clamp) + n, .branch = {o.clamp, 1.0}, .branch_steps = o.control_steps});
  v.push_back({.name = "scale branch " + label(o.branch_scale) + n, .branch = {0.0, o.branch_scale},
               .branch_steps = o.control_steps});
  for (Group g : {emb, lower, upper, blocks, head, norms})
    v.push_back({.name = "warmup " + std::to_string(o.group_warmup) + ": " + name_of(g), .warm_group = g,
                 .warm_steps = o.group_warmup});
  v.push_back({.name = "lr x" + label(o.boost) + " for " + std::to_string(o.boost_steps), .boost = o.boost,
               .boost_steps = o.boost_steps});
  for (Group g : {norms, emb, head, blocks})
    v.push_back({.name = "reset " + name_of(g) + at, .act = GroupAct::reset, .group = g, .group_steps = o.reset_step});
  v.push_back({.name = "reset adam" + at, .act = GroupAct::reset_adam, .group_steps = o.reset_step});
  for (Group g : {norms, emb, head, blocks})
    v.push_back({.name = "graft " + name_of(g) + at, .act = GroupAct::graft, .group = g, .group_steps = o.reset_step});
  // transplants, both ways between the stuck run ("none") and the healthy one ("warmup W: blocks")
  const Variant healthy = donor_row(Donor::healthy, o);
  for (Group g : {fc1, fc2, ffn, ffn_bias, qk, vo, norms, lower, upper, blocks, none})
    for (Donor d : {Donor::healthy, Donor::stuck}) {
      const std::string part = g == none ? "adam" : name_of(g);  // none: Adam's moments alone
      Variant t{.name = d == Donor::healthy ? "to stuck: healthy " + part + at : "to healthy: stuck " + part + at,
                .act = GroupAct::graft, .group = g, .group_steps = o.reset_step, .donor = d, .graft_adam = g == none};
      if (d == Donor::stuck) t.warm_group = healthy.warm_group, t.warm_steps = healthy.warm_steps;
      v.push_back(t);
    }
  const std::string rewarm = "rewarm " + std::to_string(o.group_warmup) + at;
  v.push_back({.name = rewarm, .rewarm_at = o.reset_step, .rewarm_steps = o.group_warmup});
  v.push_back({.name = "reset adam + " + rewarm, .act = GroupAct::reset_adam, .group_steps = o.reset_step,
               .rewarm_at = o.reset_step, .rewarm_steps = o.group_warmup});
  v.push_back({.name = "beta2 " + label(o.beta2), .optimizer = {.beta2 = o.beta2}});
  v.push_back({.name = "radam", .optimizer = {.optimizer = "radam"}});
  v.push_back({.name = "radam beta2 " + label(o.beta2), .optimizer = {.optimizer = "radam", .beta2 = o.beta2}});
  const std::string sgd = "sgd lr " + label(o.sgd_lr);
  v.push_back({.name = sgd, .lr = o.sgd_lr, .optimizer = {.optimizer = "sgd"}});
  v.push_back({.name = sgd + " + ln-undo-gain", .lr = o.sgd_lr,
               .optimizer = {.optimizer = "sgd", .intervene = {"ln-undo-gain"}}});
  v.push_back({.name = "hold " + std::to_string(o.hold), .optimizer = {.hold = o.hold}});
  for (std::size_t w : o.warmups) v.push_back({.name = "warmup " + std::to_string(w), .warmup = w});
  if (!only.empty())
    std::erase_if(v, [&](const Variant& x) { return std::find(only.begin(), only.end(), x.name) == only.end(); });
  return v;
}

// "" if every name --rows gives is a row's, else which is not, listing the rows.
std::string unknown_row(const CausesOptions& o) {
  const std::vector<Variant> all = variants(o, {});
  for (const std::string& name : o.rows)
    if (std::none_of(all.begin(), all.end(), [&](const Variant& v) { return v.name == name; })) {
      std::string valid;
      for (const Variant& v : all) valid += (valid.empty() ? "" : ", ") + v.name;
      return "--rows: no row '" + name + "' (rows with today's flags: " + valid + ")";
    }
  return "";
}

// "" if every row that runs (--rows, or all) can act within --steps and be judged after it, else why not.
// Only those rows are checked: a default that no running row uses (--reset-step, --hold, ...) is not.
std::string rows_problem(const CausesOptions& o) {
  if (const std::string unknown = unknown_row(o); !unknown.empty()) return unknown;
  const std::string steps = "--steps " + std::to_string(o.steps);
  for (const Variant& v : variants(o, o.rows)) {
    const std::string row = "row '" + v.name + "'";
    if ((v.act == GroupAct::reset || v.act == GroupAct::graft || v.act == GroupAct::reset_adam) && v.group_steps >= o.steps)
      return "--reset-step " + std::to_string(v.group_steps) + " must be below " + steps + " (" + row + " acts then)";
    if (v.rewarm_steps > 0 && v.rewarm_at + v.rewarm_steps > o.steps)
      return row + " warms up again over steps " + std::to_string(v.rewarm_at) + " to " +
             std::to_string(v.rewarm_at + v.rewarm_steps) + ", past " + steps +
             ": its run would end inside that warmup; give more --steps or an earlier --reset-step";
    if (v.optimizer.hold >= o.steps)
      return "--hold " + std::to_string(v.optimizer.hold) + " is not less than " + steps + ": " + row +
             " would hold every step at lr 0 and train nothing";
    const std::size_t warmup = std::max(v.warm_steps, v.warmup);
    if (warmup >= o.steps)
      return row + " warms up over " + std::to_string(warmup) + " steps, not less than " + steps +
             ": its run would end inside its warmup, where a verdict means nothing; give more " + steps.substr(0, 7) +
             " or a shorter " + (v.warm_steps >= v.warmup ? "--group-warmup" : "--warmups");
  }
  return "";
}

// A run's state at some step: what a reset or a graft puts in place.
struct RunState {
  std::vector<Array> values;                // every parameter's value, in the optimizer's order
  std::vector<std::vector<Array>> moments;  // [slot][parameter]: Adam's m and v (empty for a reset)
};

// The row's parameter flags: which parameters are in its group (`grouped`) and in its warmup group (`warmed`).
struct RowParameters {
  std::vector<bool> grouped, warmed;
};
RowParameters row_parameters(const Variant& v, const nn::Optimizer& optimizer, std::size_t layers) {
  RowParameters r;
  for (const nn::NamedParameter& p : optimizer.parameters()) {
    r.grouped.push_back(in_group(p.name, v.group, layers));
    r.warmed.push_back(in_group(p.name, v.warm_group, layers));
  }
  return r;
}

// Sets step `step`'s branch control and per-parameter lr scales, and does the row's reset or graft if it
// is due: the values of the parameters in its group become `source`'s (the initial values, or the
// donor's), and with graft_adam every parameter's Adam moments become the donor's.
void apply_row(const Variant& v, std::size_t step, nn::TransformerLM& model, nn::Optimizer& optimizer,
               const RowParameters& rp, const RunState& source) {
  model.set_branch_control(step < v.branch_steps ? v.branch : nn::BranchControl{});
  const auto ramp = [](std::size_t into, std::size_t length) {  // a linear warmup's factor, `into` steps in
    return std::min(1.0, static_cast<double>(into + 1) / static_cast<double>(length));
  };
  for (std::size_t p = 0; p < rp.grouped.size(); ++p) {
    double scale = step < v.boost_steps ? v.boost : 1.0;
    if (rp.grouped[p] && v.act == GroupAct::freeze) scale = 0.0;
    if (rp.warmed[p]) scale *= ramp(step, v.warm_steps);
    if (v.rewarm_steps > 0 && step >= v.rewarm_at) scale *= ramp(step - v.rewarm_at, v.rewarm_steps);
    optimizer.set_lr_scale(p, scale);
  }
  if (step != v.group_steps) return;
  if (v.act == GroupAct::reset_adam) {  // m = v = 0 and t = 0: Adam starts over, bias correction included
    for (std::size_t s = 0; s < optimizer.slot_names().size(); ++s)
      for (std::size_t p = 0; p < optimizer.parameters().size(); ++p) optimizer.slot(s, p).fill(0.0);
    optimizer.set_steps(0);
  }
  if (v.act == GroupAct::reset || v.act == GroupAct::graft)
    for (std::size_t p = 0; p < rp.grouped.size(); ++p)
      if (rp.grouped[p]) {
        Parameter handle = optimizer.parameters()[p].parameter;  // a handle: shares the model's value
        handle.value() = source.values[p];
      }
  if (v.act == GroupAct::graft && v.graft_adam)
    for (std::size_t s = 0; s < source.moments.size(); ++s)
      for (std::size_t p = 0; p < source.moments[s].size(); ++p) optimizer.slot(s, p) = source.moments[s][p];
}

// What one seed of one row measured. g0/gL, LN-in RMS, LN gain and b0 |g|/eps are means over the last
// --window steps; each is NaN for a run that did not finish.
struct CausesRun {
  std::vector<double> losses;  // the training loss of each step, ending at the first NaN/Inf
  double final_loss = NAN;     // held out, after the last step
  Verdict verdict = Verdict::diverged;
  double grad_ratio = NAN, ln_rms = NAN, ln_gain = NAN, grad_over_eps = NAN;
  double update_ratio = NAN;  // of the first update with lr > 0
  // Collapse (analysis/collapse.hpp) on a fixed held-out probe batch: after --collapse-step updates,
  // after --reset-step updates (before a reset or graft at that step), and after the last step.
  double top_cos_early = NAN, top_cos_mid = NAN, top_cos_end = NAN;  // the top block's position cosine
  double low_cos_end = NAN;        // block 1's (the second block's)
  double dead_end = NAN;           // the dead-unit fraction of the FFNs, mean over the blocks
  double entropy_share_end = NAN;  // the top block's attention entropy over its maximum
  double head_entropy_end = NAN, unigram_kl_end = NAN;  // the head's predictions: entropy, KL from the unigram
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CausesRun, losses, final_loss, verdict, grad_ratio, ln_rms, ln_gain, grad_over_eps,
                                   update_ratio, top_cos_early, top_cos_mid, top_cos_end, low_cos_end, dead_end,
                                   entropy_share_end, head_entropy_end, unigram_kl_end)

// The collapse measures of the model as it is now, on the probe batch.
struct CollapseProbe {
  nn::Batch batch;
  std::vector<double> unigram;
  Collapse measure(nn::TransformerLM& model) const { return collapse_on(model, batch.inputs, unigram); }
};

void record_end_collapse(const Collapse& c, CausesRun& run) {
  const std::vector<BlockCollapse>& b = c.blocks;
  run.top_cos_end = b.back().out_cosine;
  run.low_cos_end = b.size() > 1 ? b[1].out_cosine : NAN;
  std::vector<double> dead;
  for (const BlockCollapse& x : b) dead.push_back(x.dead_units);
  run.dead_end = mean_of(dead);
  run.entropy_share_end = b.back().entropy_share;
  run.head_entropy_end = c.head.entropy, run.unigram_kl_end = c.head.kl_to_unigram;
}

// The mean over the parameter tensors with |W| > 0 of |after - before| / |before|.
double update_ratio(const std::vector<Array>& before, const nn::TransformerLM& model) {
  const std::vector<nn::NamedParameter> after = model.named_parameters();
  std::vector<double> ratios;
  for (std::size_t i = 0; i < before.size(); ++i) {
    const double w = norm(before[i]);
    const Array step = after[i].parameter.value() - before[i];
    if (w > 0) ratios.push_back(norm(step) / w);
  }
  return mean_of(ratios);
}

// The median |gradient| over every element of block 0's parameters.
double block0_median_grad(const nn::TransformerLM& model) {
  std::vector<double> g;
  for (const nn::NamedParameter& p : model.blocks.front()->named_parameters())
    for (double x : p.parameter.grad()) g.push_back(std::abs(x));
  std::nth_element(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(g.size() / 2), g.end());
  return g[g.size() / 2];
}

// The end-of-run measures, one step's worth at a time.
struct WindowMeasures {
  std::vector<double> grad_ratio, ln_rms, ln_gain, grad_over_eps;
  void add(nn::TransformerLM& model, double eps) {
    StepRecord s;
    read_tape(model, s);
    grad_ratio.push_back(s.layer_grad[1] / s.layer_grad[s.layer_grad.size() - 2]);
    ln_rms.push_back(mean_of(s.ln_rms));
    ln_gain.push_back(mean_of(s.ln_gain));
    grad_over_eps.push_back(block0_median_grad(model) / eps);
  }
  void into(CausesRun& run) const {
    run.grad_ratio = mean_of(grad_ratio), run.ln_rms = mean_of(ln_rms), run.ln_gain = mean_of(ln_gain);
    run.grad_over_eps = mean_of(grad_over_eps);
  }
};

// The state of the same seed's donor row after `steps` steps (a graft row's donor): the same model,
// optimizer and batches, so they are that row's values and moments at that step.
RunState donor_state(const ModelOptions& m, const nn::Corpus& corpus, const CausesOptions& o, const Variant& donor,
                     std::size_t steps) {
  nn::TransformerLM model(m.config());
  const std::unique_ptr<nn::Optimizer> optimizer = donor.optimizer.make(model);
  const nn::Schedule schedule{nn::ScheduleKind::warmup, o.lr, donor.warmup, o.steps, 0.1};
  const RowParameters rp = row_parameters(donor, *optimizer, m.layers);
  for (std::size_t step = 0; step < steps; ++step) {
    apply_row(donor, step, model, *optimizer, rp, {});
    if (!std::isfinite(nn::forward_backward(model, nn::training_batch(corpus.data, m.batch, m.seq, m.seed, step)))) break;
    if (!nn::apply_update(*optimizer, schedule, step, 0.0).taken()) break;
  }
  RunState state{parameter_values(model), {}};
  for (std::size_t s = 0; s < optimizer->slot_names().size(); ++s) {
    state.moments.emplace_back();
    for (std::size_t p = 0; p < optimizer->parameters().size(); ++p) state.moments.back().push_back(optimizer->slot(s, p));
  }
  return state;
}

// One seed of one row.
CausesRun run_one(ModelOptions m, const Variant& variant, const nn::Corpus& corpus, const CausesOptions& o, Tick& tick) {
  m.vocab = corpus.data.vocab();
  nn::TransformerLM model(m.config());
  const std::unique_ptr<nn::Optimizer> optimizer = variant.optimizer.make(model);
  const double lr = variant.lr > 0 ? variant.lr : o.lr;
  const nn::Schedule schedule = variant.optimizer.with_hold({nn::ScheduleKind::warmup, lr, variant.warmup, o.steps, 0.1});
  // what a reset or graft puts in place, and where: the parameters in the row's groups, decided once
  const RunState source = variant.act == GroupAct::graft
                              ? donor_state(m, corpus, o, donor_row(variant.donor, o), variant.group_steps)
                              : RunState{parameter_values(model), {}};
  const RowParameters rp = row_parameters(variant, *optimizer, m.layers);
  std::mt19937_64 probe_rng = nn::rng_for(m.seed, 0, nn::RngPurpose::probe);
  const CollapseProbe probe{corpus.data.batch(nn::Split::validation, m.batch, m.seq, probe_rng),
                            nn::unigram_distribution(corpus.data.tokens(nn::Split::train), corpus.data.vocab())};
  Tape& tape = Tape::current();
  CausesRun run;
  WindowMeasures window;
  std::size_t step = 0;
  for (; step < o.steps; ++step) {
    if (step == o.collapse_step) run.top_cos_early = probe.measure(model).blocks.back().out_cosine;
    if (step == o.reset_step) run.top_cos_mid = probe.measure(model).blocks.back().out_cosine;
    const bool measured = step + o.window >= o.steps;
    tape.keep_contributions = measured;  // for the norm gain (through_norm)
    apply_row(variant, step, model, *optimizer, rp, source);
    const double loss = nn::forward_backward(model, nn::training_batch(corpus.data, m.batch, m.seq, m.seed, step));
    run.losses.push_back(loss);
    const std::string row = "row '" + variant.name + "'";
    if (!std::isfinite(loss)) {
      refuse_first_step({loss, NAN, 0.0}, step, row);
      break;
    }
    if (measured) window.add(model, variant.optimizer.eps);
    const bool first_move = std::isnan(run.update_ratio) && schedule.lr(step) > 0;
    const std::vector<Array> before = first_move ? parameter_values(model) : std::vector<Array>{};
    const nn::Update u = nn::apply_update(*optimizer, schedule, step, 0.0);
    if (!u.taken()) {  // the gradient overflowed: no weight moved
      refuse_first_step({loss, u.grad_norm, u.lr}, step, row);
      break;
    }
    if (first_move) run.update_ratio = update_ratio(before, model);
    char what[96];
    std::snprintf(what, sizeof what, "loss %.4f lr %.2e |g| %.3f", loss, u.lr, u.grad_norm);
    tick(1, what);
  }
  tape.keep_contributions = false;
  // the held-out loss is the model's as its last step ran it (with the branch control still on if it was)
  if (step == o.steps) {
    run.final_loss = nn::evaluate(model, corpus.data, m.batch, m.seq, o.eval_batches, m.seed);
    window.into(run);
    record_end_collapse(probe.measure(model), run);
  }
  run.verdict = verdict_of(run.final_loss, Thresholds{corpus.uniform, corpus.unigram, o.margin});
  return run;
}

// ---- reporting ----

// The values of one field over the seeds of a row.
std::vector<double> over(const std::vector<const CausesRun*>& seeds, double CausesRun::*field) {
  std::vector<double> v;
  for (const CausesRun* r : seeds) v.push_back(r->*field);
  return v;
}

// The frozen-blocks row's seeds of placement p: the final losses a trained run must beat. Empty when
// the row was not run (--rows).
struct Baseline {
  double lowest = NAN;  // the lowest final loss over its seeds
  double gap = NAN;     // its mean final loss minus the entropy-rate floor
};

Baseline baseline_of(const std::vector<CausesRun>& runs, const Grid& grid, const std::vector<Variant>& rows,
                     std::size_t p, double floor) {
  Baseline b;
  for (std::size_t v = 0; v < rows.size(); ++v)
    if (rows[v].act == GroupAct::freeze) {
      const std::vector<double> finals = over(seeds_of(runs, grid, {p, v}), &CausesRun::final_loss);
      b.lowest = *std::min_element(finals.begin(), finals.end());
      b.gap = mean_of(finals) - floor;
    }
  return b;
}

Table causes_table(const std::vector<CausesRun>& runs, const Grid& grid, const std::vector<Variant>& rows,
                   const nn::Corpus& corpus, double margin) {
  Table t({"placement", "change", "trained", "stuck", "diverged", "beat frozen", "final loss", "gap/frozen", "g0/gL",
           "LN-in RMS", "LN gain", "b0 |g|/eps", "|dW|/|W| 1st"});
  for (std::size_t p = 0; p < grid.labels(0).size(); ++p) {
    const Baseline base = baseline_of(runs, grid, rows, p, corpus.floor);
    for (std::size_t v = 0; v < rows.size(); ++v) {
      const std::vector<const CausesRun*> seeds = seeds_of(runs, grid, {p, v});
      std::size_t count[3] = {0, 0, 0}, beat = 0;
      std::vector<double> gap;
      for (const CausesRun* r : seeds) {
        ++count[static_cast<int>(r->verdict)];
        beat += beats_frozen(r->final_loss, base.lowest, margin);
        gap.push_back((r->final_loss - corpus.floor) / base.gap);
      }
      const auto n = [&](Verdict x) { return std::to_string(count[static_cast<int>(x)]); };
      const auto stat = [&](double CausesRun::*field, int digits = 3) { return finite_stat(over(seeds, field), digits); };
      t.add_row({grid.labels(0)[p], rows[v].name, n(Verdict::trained), n(Verdict::stuck), n(Verdict::diverged),
                 std::isnan(base.lowest) ? "-" : std::to_string(beat), stat(&CausesRun::final_loss, 4), finite_stat(gap),
                 stat(&CausesRun::grad_ratio), stat(&CausesRun::ln_rms), stat(&CausesRun::ln_gain),
                 stat(&CausesRun::grad_over_eps), stat(&CausesRun::update_ratio)});
    }
  }
  return t;
}

Table collapse_table(const std::vector<CausesRun>& runs, const Grid& grid, const std::vector<Variant>& rows,
                     const CausesOptions& o) {
  const std::string early = std::to_string(o.collapse_step), mid = std::to_string(o.reset_step);
  Table t({"placement", "change", "top cos " + early, "top cos " + mid, "top cos end", "1 - top cos", "block 1 cos", "dead FFN",
           "top attn H/max", "head H", "KL(u, head)"});
  for (std::size_t p = 0; p < grid.labels(0).size(); ++p)
    for (std::size_t v = 0; v < rows.size(); ++v) {
      const std::vector<const CausesRun*> seeds = seeds_of(runs, grid, {p, v});
      const auto stat = [&](double CausesRun::*field) { return finite_stat(over(seeds, field), 3); };
      std::vector<double> gap = over(seeds, &CausesRun::top_cos_end);  // 1 - cos: how far from one vector
      for (double& x : gap) x = 1.0 - x;
      t.add_row({grid.labels(0)[p], rows[v].name, stat(&CausesRun::top_cos_early), stat(&CausesRun::top_cos_mid),
                 stat(&CausesRun::top_cos_end), finite_stat(gap, 3), stat(&CausesRun::low_cos_end), stat(&CausesRun::dead_end),
                 stat(&CausesRun::entropy_share_end), stat(&CausesRun::head_entropy_end),
                 stat(&CausesRun::unigram_kl_end)});
    }
  return t;
}

Table runs_table(const std::vector<CausesRun>& runs, const Grid& grid, const std::vector<Variant>& rows,
                 const std::vector<unsigned>& seeds) {
  Table t({"placement", "change", "seed", "final_loss", "verdict", "grad_ratio", "ln_rms", "ln_gain", "grad_over_eps",
           "update_ratio", "top_cos_early", "top_cos_mid", "top_cos_end", "low_cos_end", "dead_end", "entropy_share_end",
           "head_entropy_end", "unigram_kl_end"});
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const Cell c{&grid, i};
    const CausesRun& r = runs[i];
    t.add_row({grid.labels(0)[c["placement"]], rows[c["variant"]].name, std::to_string(seeds[c["seed"]]),
               fmt(r.final_loss, 6), to_string(r.verdict), fmt(r.grad_ratio, 6), fmt(r.ln_rms, 6), fmt(r.ln_gain, 6),
               fmt(r.grad_over_eps, 6), fmt(r.update_ratio, 6), fmt(r.top_cos_early, 6), fmt(r.top_cos_mid, 6),
               fmt(r.top_cos_end, 6), fmt(r.low_cos_end, 6), fmt(r.dead_end, 6), fmt(r.entropy_share_end, 6),
               fmt(r.head_entropy_end, 6), fmt(r.unigram_kl_end, 6)});
  }
  return t;
}
// One plot per placement: the training loss of every row, the mean over seeds in 10-step windows (a
// curve ends at the first window in which a seed's loss was NaN/Inf).
void draw_curves(const std::vector<CausesRun>& runs, const Grid& grid, std::size_t p, const std::vector<Variant>& rows,
                 const nn::Corpus& corpus, std::size_t steps, const std::filesystem::path& dir) {
  const std::size_t window = std::min<std::size_t>(10, steps);
  const std::string& placement = grid.labels(0)[p];
  Plot plot{placement + ": training loss (mean over seeds and " + std::to_string(window) + "-step windows)", "step",
            "loss (nats)", false, false, {}};
  for (std::size_t v = 0; v < rows.size(); ++v) {
    std::vector<const std::vector<double>*> losses;
    for (const CausesRun* r : seeds_of(runs, grid, {p, v})) losses.push_back(&r->losses);
    plot.series.push_back(loss_curve(losses, steps, window, rows[v].name));
  }
  plot.series.push_back(flat_line("uniform log V", 0, static_cast<double>(steps), corpus.uniform));
  plot.series.push_back(flat_line("entropy-rate floor", 0, static_cast<double>(steps), corpus.floor));
  draw(plot, dir, "curves_" + file_part(placement));
}

void print_setup(const Experiment& ex, const CausesOptions& o, const nn::Corpus& corpus, std::size_t rows) {
  const ModelOptions& mo = ex.model;
  std::printf("causes: %zu runs (%zu placements x %zu rows x %zu seeds), %zu steps each, lr %g\n",
              ex.placements.size() * rows * ex.seeds, ex.placements.size(), rows, ex.seeds, o.steps, o.lr);
  std::printf("  model: layers %zu, d_model %zu, heads %zu, batch %zu x seq %zu; %s (vocab %zu), uniform log V %.4f, "
              "unigram H1 %.4f, floor %.4f%s\n", mo.layers, mo.d_model, mo.heads, mo.batch, mo.seq, corpus.name.c_str(),
              corpus.data.vocab(), corpus.uniform, corpus.unigram, corpus.floor, mo.qk_note().c_str());
  std::printf("  every row: Adam(0.9, 0.98, eps 1e-8), constant lr, no clipping, unless the row changes it; "
              "verdicts: diverged if NaN/Inf or final > %.4f, stuck if final > %.4f, else trained\n",
              corpus.uniform + o.margin, corpus.unigram - o.margin);
}

void run(Experiment& ex, CausesOptions& o) {
  const ModelOptions& mo = ex.model;
  keep_first_of_each(o.warmups);
  const std::vector<Variant> rows = variants(o, o.rows);
  std::vector<std::string> names;
  for (const Variant& v : rows) names.push_back(v.name);
  ex.check_memory(mo.config(), 2, true, ex.placements.size() * rows.size() * ex.seeds, nn::corpus_bytes(o.corpus, mo.vocab));
  const nn::Corpus corpus = nn::build_corpus(o.corpus, mo.vocab, mo.seed, mo.seq);
  check_margin(corpus, o.margin);  // before any run: a margin that leaves no verdict is refused
  print_setup(ex, o, corpus, rows.size());
  Grid grid;
  grid.axis("placement", ex.placements).axis("variant", names).axis("seed", labels(ex.seed_list()));
  const auto runs = run_steps<CausesRun>(ex, grid, o.steps, [&](const Cell& c, Tick& tick) {
    return run_one(ex.cell_model(c), rows[c["variant"]], corpus, o, tick);
  });
  if (!runs) return;
  const std::filesystem::path dir = ex.out;
  const Table t = causes_table(*runs, grid, rows, corpus, o.margin);
  std::printf("\nper row, over the seeds (g0/gL, LN-in RMS, LN gain, b0 |g|/eps: the last %zu steps; |dW|/|W|: the "
              "first update with lr > 0):\n\n%s", o.window, t.to_text().c_str());
  t.write_csv(dir / "causes.csv");
  const Table collapse = collapse_table(*runs, grid, rows, o);
  std::printf("\ncollapse on a held-out probe batch, over the seeds (top: the last block; cos: the mean cosine between "
              "positions, 1 - top cos its distance from 1; %zu and %zu: after that many updates, the rest after the last; dead FFN: units <= 0 at every "
              "position, mean over the blocks; head H: the entropy of its predictions, against H1 %.4f; KL: the "
              "unigram distribution u's from them):\n\n%s",
              o.collapse_step, o.reset_step, corpus.unigram, collapse.to_text().c_str());
  collapse.write_csv(dir / "collapse.csv");
  runs_table(*runs, grid, rows, ex.seed_list()).write_csv(dir / "runs.csv");
  for (std::size_t p = 0; p < ex.placements.size(); ++p) draw_curves(*runs, grid, p, rows, corpus, o.steps, dir);
  std::printf("\nwrote %s: causes.csv, collapse.csv, runs.csv, curves_<placement> (.png, .svg)\n", dir.string().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Experiment ex("causes", "Why Post-LN gets stuck without warmup, by intervention: at lr 1e-2 on the Markov corpus "
                "(where warmup's grid finds Post-LN stuck and Pre-LN training), each row changes one thing -- a "
                "backward-pass intervention, a clamp or scale of the branches, a warmup of one parameter group, "
                "oversized first steps, a reset or a graft, a transplant between the stuck and a healthy run, a second "
                "warmup, Adam's beta2, RAdam, a hold, a warmup -- and trains every seed again; counts of "
                "trained/stuck/diverged and of seeds that beat a run with frozen blocks, the final held-out loss, the "
                "gradient and update measures, and how collapsed each run is. Default: 2 placements x 58 rows x 5 "
                "seeds x 300 steps.",
                "out/causes");
  ex.model = stability_model();
  ex.placements = {"post", "pre"};
  ex.seeds = 5;
  CausesOptions o;
  add_flag(ex.app, "--lr", o.lr, "the learning rate of every row (constant after any warmup)", RealRange::above(0));
  add_training_flags(ex.app, o, {"--steps", "--eval-batches", "--margin", "--window"});
  describe(ex.app, "--margin", "verdict margin in nats (as in warmup; also for 'beat frozen')");
  describe(ex.app, "--window", "the last steps over which g0/gL, LN-in RMS, LN gain and b0 |g|/eps are averaged");
  add_flag(ex.app, "--rows", o.rows, "the rows to run, by their names as the table prints them (comma-separated; default all)");
  add_flag(ex.app, "--warmups", o.warmups, "the warmup rows' lengths W (comma-separated)", Whole{0});
  add_flag(ex.app, "--hold", o.hold, "the hold row's N: steps at lr 0 that update Adam's moments",
           Whole{0, Whole::no_max, "0: none"});
  add_flag(ex.app, "--adam-beta2", o.beta2, "the beta2 rows' beta2, of Adam and of RAdam (every other row: 0.98)",
           RealRange::within(0, 1 - 1e-9));
  add_flag(ex.app, "--sgd-lr", o.sgd_lr, "the SGD rows' learning rate (SGD with momentum 0.9, constant)", RealRange::above(0));
  add_flag(ex.app, "--clamp", o.clamp, "the clamp row's C: each branch at most C times its skip's RMS", RealRange::above(0));
  add_flag(ex.app, "--branch-scale", o.branch_scale, "the scale row's K: each branch times K", RealRange::above(0));
  add_flag(ex.app, "--control-steps", o.control_steps, "the clamp and scale rows' N: the first steps they act on", Whole{0});
  add_flag(ex.app, "--group-warmup", o.group_warmup, "the per-group warmup rows' length W", Whole{1});
  add_flag(ex.app, "--boost", o.boost, "the oversized-steps row's M: the lr times M for its first steps", RealRange::above(0));
  add_flag(ex.app, "--boost-steps", o.boost_steps, "the oversized-steps row's N", Whole{0});
  add_flag(ex.app, "--reset-step", o.reset_step,
           "the reset, graft, transplant and rewarm rows' step S (below --steps); also a column of the collapse table",
           Whole{0});
  add_flag(ex.app, "--collapse-step", o.collapse_step, "the early column of the collapse table: after this many updates (\"-\" if not below --steps)",
           Whole{0});
  add_corpus_flags(ex.app, o.corpus, true);
  ex.hold_holds_every_run = false;  // --hold is the hold row's: checked by rows_problem if that row runs
  ex.check_flags = [&]() -> std::string {
    if (o.window > o.steps) return o.at_most_steps("--window", o.window);
    return rows_problem(o);
  };
  describe(ex.app, "--placements", "placements to train (comma-separated)");
  describe(ex.app, "--seeds", "seeds per row");
  ex.prints_time = true;
  return ex.main(argc, argv, [&] { run(ex, o); });
}
