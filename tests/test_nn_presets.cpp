// The five presets give the numbers gradscope's five placements gave before the three axes: each
// preset's TransformerLM against the same architecture built by hand here from nn's layers, with
// today's formulas (docs/placements.md) and the same initialisation draws in the same order. The loss,
// every parameter's gradient and every tape entry's op, shape and value agree bit for bit.
#include <cmath>
#include <map>
#include <memory>

#include "check.hpp"
#include "engine/engine.hpp"
#include "nn/attention.hpp"
#include "nn/embedding.hpp"
#include "nn/layernorm.hpp"
#include "nn/linear.hpp"
#include "nn/mlp.hpp"
#include "nn/transformer_lm.hpp"
#include "nn_gradcheck.hpp"

namespace test_nn_presets {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;

namespace {

const IndexArray ids = {{0, 3, 4}, {2, 2, 1}};
const IndexArray targets = {{3, 4, 0}, {2, 1, 1}};

// One block of a preset, written out with its formula.
struct HandBlock : Module {
  HandBlock(const std::string& preset, const ModelConfig& c, Initializer& init)
      : kind(preset), attn(c.d_model, c.heads, init), mlp(c.d_model, c.ff(), init) {
    const std::size_t d = c.d_model;
    if (kind == "rezero") {
      a_attn = add_parameter("rezero_attn", zeros({1}));
      a_mlp = add_parameter("rezero_mlp", zeros({1}));
    } else {
      ln1 = std::make_unique<LayerNorm>(d);
      ln2 = std::make_unique<LayerNorm>(d);
      add_child("ln1", *ln1);
    }
    add_child("attn", attn);
    if (kind == "peri") {
      ln_a = std::make_unique<LayerNorm>(d);
      ln_m = std::make_unique<LayerNorm>(d);
      add_child("ln_attn_out", *ln_a);
    }
    if (ln2) add_child("ln2", *ln2);
    add_child("mlp", mlp);
    if (ln_m) add_child("ln_mlp_out", *ln_m);
    if (kind == "deepnorm") {  // DeepNet's decoder-only constants for N layers
      alpha = std::pow(2.0 * static_cast<double>(c.layers), 0.25);
      const double beta = std::pow(8.0 * static_cast<double>(c.layers), -0.25);
      for (Linear* l : {&mlp.fc1, &mlp.fc2, &attn.v, &attn.o}) l->weight.value() *= beta;
    }
  }
  Var forward(const Var& x) {
    if (kind == "post") {  // h = LN1(x + Attn(x)); y = LN2(h + MLP(h))
      Var h = ln1->forward(x + attn.forward(x));
      return ln2->forward(h + mlp.forward(h));
    }
    if (kind == "deepnorm") {  // h = LN1(alpha x + Attn(x)); y = LN2(alpha h + MLP(h))
      Var sx = x * alpha;
      Var h = ln1->forward(sx + attn.forward(x));
      Var sh = h * alpha;
      return ln2->forward(sh + mlp.forward(h));
    }
    if (kind == "pre") {  // h = x + Attn(LN1(x)); y = h + MLP(LN2(h))
      Var h = x + attn.forward(ln1->forward(x));
      return h + mlp.forward(ln2->forward(h));
    }
    if (kind == "peri") {  // h = x + LNa(Attn(LN1(x))); y = h + LNm(MLP(LN2(h)))
      Var h = x + ln_a->forward(attn.forward(ln1->forward(x)));
      return h + ln_m->forward(mlp.forward(ln2->forward(h)));
    }
    Var h = x + attn.forward(x) * a_attn;  // rezero: h = x + a Attn(x); y = h + b MLP(h)
    return h + mlp.forward(h) * a_mlp;
  }
  std::string kind;
  double alpha = 1.0;
  std::unique_ptr<LayerNorm> ln1, ln_a, ln2, ln_m;
  CausalSelfAttention attn;
  MLP mlp;
  Parameter a_attn, a_mlp;
};

// The language model around the blocks: the draws in TransformerLM's order (tok_emb, pos_emb, the
// blocks, head), ln_f for pre and peri.
struct HandModel : Module {
  HandModel(const std::string& preset, const ModelConfig& c)
      : init(c.init, c.seed), tok(c.vocab, c.d_model, init), pos(c.context, c.d_model, init) {
    add_child("tok_emb", tok);
    add_child("pos_emb", pos);
    for (std::size_t i = 0; i < c.layers; ++i) {
      blocks.push_back(std::make_unique<HandBlock>(preset, c, init));
      add_child("blocks." + std::to_string(i), *blocks.back());
    }
    if (preset == "pre" || preset == "peri") {
      ln_f = std::make_unique<LayerNorm>(c.d_model);
      add_child("ln_f", *ln_f);
    }
    head = std::make_unique<Linear>(c.d_model, c.vocab, init);
    add_child("head", *head);
    name_parameters();
  }
  Var loss() {
    Var x = tok.forward(ids) + pos.forward(3);
    for (auto& b : blocks) x = b->forward(x);
    if (ln_f) x = ln_f->forward(x);
    return cross_entropy(head->forward(x), targets);
  }
  Initializer init;
  Embedding tok;
  PositionalEmbedding pos;
  std::vector<std::unique_ptr<HandBlock>> blocks;
  std::unique_ptr<LayerNorm> ln_f;
  std::unique_ptr<Linear> head;
};

struct Run {
  Array loss;
  std::map<std::string, Array> values, grads;
  std::vector<std::pair<std::string, Shape>> ops;  // every tape entry's op and shape, in order
  std::vector<Array> entry_values;
};

template <class Model, class Loss>
Run run(Model& model, Loss loss_of) {
  test::jitter(model.named_parameters(), 0.2, 3);  // the same perturbation: names and order agree
  Tape tape;
  TapeScope scope(tape);
  Var loss = loss_of(model);
  loss.backward();
  Run r{loss.value(), {}, {}, {}, {}};
  for (const NamedParameter& p : model.named_parameters()) {
    r.values[p.name] = p.parameter.value();
    r.grads[p.name] = p.parameter.grad();
  }
  for (std::size_t i = 0; i < tape.size(); ++i) {
    r.ops.push_back({tape.entry(static_cast<int>(i)).op, shape_of(tape.entry(static_cast<int>(i)).value)});
    r.entry_values.push_back(tape.entry(static_cast<int>(i)).value);
  }
  return r;
}

}  // namespace

TEST_CASE("every preset gives the numbers of its placement, bit for bit", "[nn][zoo][presets]") {
  for (const std::string& preset : placement_presets()) {
    for (Init scheme : {Init::xavier, Init::gpt2}) {
      INFO(preset << ", init " << to_string(scheme));
      const ModelConfig c = test::gradcheck_config(preset, scheme);
      TransformerLM model(c);
      HandModel hand(preset, c);
      const Run a = run(model, [](TransformerLM& m) { return m.loss(ids, targets); });
      const Run b = run(hand, [](HandModel& m) { return m.loss(); });
      for (std::size_t i = 0; i < std::min(a.ops.size(), b.ops.size()); ++i)
        if (a.ops[i] != b.ops[i]) {
          INFO("first different entry " << i << ": " << a.ops[i].first << " " << shape_str(a.ops[i].second) << " vs "
                                        << b.ops[i].first << " " << shape_str(b.ops[i].second));
          CHECK(false);
          break;
        }
      REQUIRE((a.loss == b.loss));
      REQUIRE((a.values == b.values));  // the same names, the same draws
      REQUIRE((a.grads == b.grads));
      REQUIRE(a.ops == b.ops);        // the same ops in the same order
      REQUIRE((a.entry_values == b.entry_values));
    }
  }
}

}  // namespace test_nn_presets
