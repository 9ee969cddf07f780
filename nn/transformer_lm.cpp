#include "nn/transformer_lm.hpp"

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
  return c;
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
      ln_f(c.placement == Placement::pre || c.placement == Placement::peri ? std::make_unique<LayerNorm>(c.d_model)
                                                                           : nullptr),
      head(c.d_model, c.vocab, init_) {
  add_child("tok_emb", tok_emb);
  add_child("pos_emb", pos_emb);
  for (std::size_t i = 0; i < blocks.size(); ++i) add_child("blocks." + std::to_string(i), *blocks[i]);
  if (ln_f) add_child("ln_f", *ln_f);
  add_child("head", head);
  name_parameters();
}

void TransformerLM::set_fused_norms(bool fused) {
  for (auto& block : blocks) block->set_fused_norms(fused);
  if (ln_f) ln_f->fused = fused;
}

Var TransformerLM::logits(const IndexArray& ids, Site site) {
  const Shape s = shape_of(ids);
  if (s.size() != 2)
    fail("TransformerLM.logits", site, "ids must have shape (B, T), got " + shape_str(s));
  if (s[0] == 0 || s[1] == 0 || s[1] > config.context)
    fail("TransformerLM.logits", site, "ids " + shape_str(s) + " need B >= 1 and 1 <= T <= context = " +
                                           std::to_string(config.context));
  for (std::int64_t id : ids)
    if (id < 0 || static_cast<std::size_t>(id) >= config.vocab)
      fail("TransformerLM.logits", site, "token id " + std::to_string(id) + " in ids " + shape_str(s) +
                                             " is out of range [0, vocab = " + std::to_string(config.vocab) + ")");

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
  return cross_entropy(logits(ids, site), targets).named("loss");
}

}  // namespace gs::nn
