#include "nn/transformer_lm.hpp"

#include <algorithm>
#include <cmath>

#include "engine/engine.hpp"

namespace gs::nn {
namespace {

// Throws for a config no model can be built from; returns it unchanged otherwise.
const ModelConfig& checked(const ModelConfig& c) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw Error("TransformerLM: " + what);
  };
  need(c.vocab > 0, "vocab must be at least 1");
  need(c.context > 0, "context must be at least 1");
  need(c.layers > 0, "layers must be at least 1");
  need(c.heads > 0, "heads must be at least 1");
  need(c.d_model > 0 && c.d_model % c.heads == 0,
       "d_model " + std::to_string(c.d_model) + " must be a positive multiple of heads " + std::to_string(c.heads));
  const std::string why = refusal(c);
  need(why.empty(), "placement '" + placement_name(c) + "' is refused: " + why);
  return c;
}

// The final norm: pre, peri, mixln and out end their stream of sums with one (none for norm none), as
// their rows in the registry say (final_norm, nn/kinds.cpp); post and b2t end theirs with a block's
// ln2 already.
std::unique_ptr<NormLayer> make_final_norm(const ModelConfig& c) {
  return kind_of(c.placement).final_norm ? make_norm(c.norm, c.d_model, c.dyt_alpha) : nullptr;
}

std::vector<std::unique_ptr<Block>> make_blocks(const ModelConfig& config, Initializer& init) {
  std::vector<std::unique_ptr<Block>> blocks;
  for (std::size_t i = 0; i < config.layers; ++i) blocks.push_back(std::make_unique<Block>(config, i, init));
  return blocks;
}

}  // namespace

TransformerLM::TransformerLM(const ModelConfig& c)
    : config(checked(c)),
      init_(c.init, c.seed),
      tok_emb(c.vocab, c.d_model, init_),
      pos_emb(c.context, c.d_model, init_),
      blocks(make_blocks(c, init_)),
      ln_f(make_final_norm(c)),
      head(c.d_model, c.vocab, init_) {
  add_child("tok_emb", tok_emb);
  add_child("pos_emb", pos_emb);
  for (std::size_t i = 0; i < blocks.size(); ++i) add_child("blocks." + std::to_string(i), *blocks[i]);
  if (ln_f) add_child("ln_f", *ln_f);
  add_child("head", head);
  name_parameters();
  if (c.residual == Residual::admin) {
    // The profiling batch: 4 sequences of `context` tokens, uniform over the vocabulary, drawn after
    // every parameter, so that no other parameter's draws move.
    IndexArray ids = IndexArray::from_shape({4, c.context});
    for (std::int64_t& id : ids) id = static_cast<std::int64_t>(init_.rng()() % c.vocab);
    profile_admin(ids);
  }
}

std::vector<NormTrace> TransformerLM::norm_traces() const {
  std::vector<NormTrace> traces;
  for (const auto& block : blocks) traces.insert(traces.end(), block->last.norms.begin(), block->last.norms.end());
  if (ln_f && !blocks.empty() && last.final_norm.index() >= 0)  // ln_f reads the last block's output
    traces.push_back({"ln_f", blocks.back()->last.out, last.final_norm, true});
  return traces;
}

void TransformerLM::set_fused_norms(bool fused) {
  for (auto& block : blocks) block->set_fused_norms(fused);
  if (ln_f) ln_f->fused = fused;
}

void TransformerLM::profile_admin(const IndexArray& ids) {
  if (config.residual != Residual::admin)
    throw Error("TransformerLM.profile_admin: the model's residual is " + to_string(config.residual) + ", not admin");
  // One forward pass on a tape of its own, without gradients; each block sets its omegas from the
  // running ratio before its adds and updates the ratio after each sublayer (Block::forward).
  Tape tape;
  TapeScope on(tape);
  NoGradScope no_grad(tape);
  AdminProfile profile;
  for (auto& block : blocks) block->admin_profile = &profile;
  try {
    logits(ids);
  } catch (...) {
    for (auto& block : blocks) block->admin_profile = nullptr;
    throw;
  }
  for (auto& block : blocks) block->admin_profile = nullptr;
  last = LMTrace{};
  for (auto& block : blocks) block->last = BlockTrace{};
}

void TransformerLM::set_branch_control(const BranchControl& control) {
  if (!(control.clamp >= 0.0) || !std::isfinite(control.clamp) || !(control.scale > 0.0) || !std::isfinite(control.scale))
    throw Error("set_branch_control: clamp " + std::to_string(control.clamp) + " must be >= 0 and scale " +
                std::to_string(control.scale) + " > 0, both finite");
  for (auto& block : blocks) block->branch_control = control;
}

void TransformerLM::set_interventions(const Interventions& iv) {
  const std::string why = refusal(iv, config);
  if (!why.empty()) throw Error("intervene '" + to_string(iv) + "' is refused for " + placement_name(config) + ": " + why);
  interventions_ = iv;
  for (auto& block : blocks) {
    block->interventions = iv;
    for (NormLayer* n : block->norms()) {
      n->backward_mode = NormGrad{iv.ln_undo_gain, iv.ln_detach_stats};
      for (NamedParameter& p : n->named_parameters()) p.parameter.set_requires_grad(!iv.freeze_ln);
    }
  }
}

Var TransformerLM::logits(const IndexArray& ids, Site site) {
  const Shape s = shape_of(ids);
  if (s.size() != 2)
    fail("TransformerLM.logits", site, "ids must have shape (B, T), got " + shape_str(s));
  if (s[0] == 0 || s[1] == 0 || s[1] > config.context)
    fail("TransformerLM.logits", site, "ids " + shape_str(s) + " need B >= 1 and 1 <= T <= context = " +
                                           std::to_string(config.context));
  // Token ids are checked once, by tok_emb (Embedding::forward), under the same call site.

  // Each child runs under its name on the tape's module scope (Entry::scope "blocks.3", ...).
  Tape& tape = Tape::current();
  auto scoped = [&](const std::string& name, auto forward) {
    ModuleScope scope(tape, name);
    return forward();
  };
  // x = tok_emb[ids] + pos_emb[0:T]:  (B, T, C) + (T, C) -> (B, T, C)
  Var x = (scoped("tok_emb", [&] { return tok_emb.forward(ids, site); }) +
           scoped("pos_emb", [&] { return pos_emb.forward(s[1], site); }))
              .named("emb");
  last = LMTrace{};
  last.emb = x;
  for (auto& block : blocks)  // (B, T, C)
    x = scoped("blocks." + std::to_string(block->index), [&] { return block->forward(x, site); });
  if (ln_f) {
    x = scoped("ln_f", [&] { return ln_f->forward(x, site); }).named("ln_f");  // (B, T, C), pre and peri
    last.final_norm = x;
  }
  last.logits = scoped("head", [&] { return head.forward(x, site); }).named("logits");  // (B, T, V) = x W + b
  return last.logits;
}

Var TransformerLM::loss(const IndexArray& ids, const IndexArray& targets, Site site) {
  if (shape_of(targets) != shape_of(ids))
    fail("TransformerLM.loss", site, "targets " + shape_str(shape_of(targets)) + " must have the shape of ids " +
                                         shape_str(shape_of(ids)));
  for (std::int64_t t : targets)
    if (t < 0 || static_cast<std::size_t>(t) >= config.vocab)
      fail("TransformerLM.loss", site, "target " + std::to_string(t) + " is out of range [0, vocab = " +
                                           std::to_string(config.vocab) + ")");
  // L = (1 / BT) sum_{b,t} -log softmax(logits[b, t])[targets[b, t]]
  Var z = logits(ids, site);
  if (z_loss == 0.0) {
    last.ce = cross_entropy(z, targets, site).named("loss");
    return last.ce;
  }
  last.ce = cross_entropy(z, targets, site).named("ce");
  // + C * (1 / BT) sum_{b,t} (log Z_{b,t})^2
  last.log_z = log_partition(z, site).named("log_z");  // (B, T)
  Var z_term = mean(last.log_z * last.log_z, {}, false, site).named("z_loss");
  return (last.ce + z_term * z_loss).named("loss");
}

Var log_partition(const Var& logits, Site site) {
  const Shape s = logits.shape(site);
  if (s.size() != 3 || s[2] == 0) fail("log_partition", site, "needs logits (B, T, V) with V >= 1, got " + shape_str(s));
  // m = max_v z_v per row, a constant (B, T, 1), and the same as (B, T)
  const Array& z = logits.value();
  const std::size_t V = s[2];
  Array m = Array::from_shape({s[0], s[1], 1});
  for (std::size_t r = 0; r < m.size(); ++r) m.data()[r] = *std::max_element(z.data() + r * V, z.data() + (r + 1) * V);
  Array m_flat = Array::from_shape({s[0], s[1]});
  std::copy(m.begin(), m.end(), m_flat.begin());
  Tape& tape = logits.tape(site);
  Var mc = tape.constant(std::move(m), site);
  // log Z = m + log sum_v e^(z_v - m)     (B, T)
  return tape.constant(std::move(m_flat), site) + log(sum(exp(logits - mc, site), {2}, false, site), site);
}

}  // namespace gs::nn
