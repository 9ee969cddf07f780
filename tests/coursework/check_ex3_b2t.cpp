// The check of exercise 3 (docs/coursework.md#ex3): build/bin/gradscope_tests "[ex3]"
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "../check.hpp"
#include "../nn_gradcheck.hpp"
#include "ex3_b2t.hpp"
#include "nn/block.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"

using namespace gs;
using namespace gs::nn;
using gs::coursework::B2TBlock;

namespace {

std::vector<std::string> sorted_names(const Module& m) {
  std::vector<std::string> names;
  for (const NamedParameter& p : m.named_parameters()) names.push_back(p.name);
  std::sort(names.begin(), names.end());
  return names;
}

// Copies every parameter value of `from` into the parameter of `to` with the same name.
void copy_parameters(const Module& from, const Module& to) {
  for (const NamedParameter& src : from.named_parameters())
    for (NamedParameter dst : to.named_parameters())
      if (dst.name == src.name) dst.parameter.value() = src.parameter.value();
}

// A language model whose blocks are B2T blocks: tok_emb + pos_emb, the blocks, a linear head.
struct B2TModel : Module {
  explicit B2TModel(const ModelConfig& c)
      : init(c.init, c.seed), tok(c.vocab, c.d_model, init), pos(c.context, c.d_model, init),
        head(c.d_model, c.vocab, init) {
    add_child("tok_emb", tok);
    add_child("pos_emb", pos);
    for (std::size_t i = 0; i < c.layers; ++i) {
      blocks.push_back(std::make_unique<B2TBlock>(c, init));
      add_child("blocks." + std::to_string(i), *blocks.back());
    }
    add_child("head", head);
  }
  Var loss(const IndexArray& ids, const IndexArray& targets) {
    Var x = tok.forward(ids) + pos.forward(ids.shape()[1]);  // (B, T, C)
    for (auto& block : blocks) x = block->forward(x);        // (B, T, C)
    return cross_entropy(head.forward(x), targets);          // scalar
  }
  Initializer init;
  Embedding tok;
  PositionalEmbedding pos;
  std::vector<std::unique_ptr<B2TBlock>> blocks;
  Linear head;
};

}  // namespace

TEST_CASE("ex3 B2T: its parameters are nn::Block's (post) parameters, by name", "[coursework][ex3]") {
  Initializer init_b2t(Init::xavier, 1), init_post(Init::xavier, 1);
  B2TBlock b2t(test::tiny_config(Placement::post), init_b2t);
  Block post(test::tiny_config(Placement::post), 0, init_post);
  REQUIRE(sorted_names(b2t) == sorted_names(post));
}

TEST_CASE("ex3 B2T: equals Post-LN with the block's input added before LN2", "[coursework][ex3]") {
  // With the same weights, B2T(x) = LN2(s + x) where s = h + MLP(h) is Post-LN's last residual sum.
  Initializer init_b2t(Init::xavier, 2), init_post(Init::xavier, 2);
  B2TBlock b2t(test::tiny_config(Placement::post), init_b2t);
  Block post(test::tiny_config(Placement::post), 0, init_post);
  test::jitter(post.named_parameters(), 0.2, 3);  // LN weights != 1, biases != 0
  copy_parameters(post, b2t);
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.constant(test::randn({2, 3, 4}, 4));
  post.forward(x);
  const Array expected = post.ln2->forward(post.last.mlp_sum + x).value();
  const Array y = b2t.forward(x).value();
  REQUIRE(y.shape() == expected.shape());
  REQUIRE(xt::allclose(y, expected, 1e-12, 1e-14));
  REQUIRE_FALSE(xt::allclose(y, post.last.out.value(), 1e-3, 1e-3));  // and it is not Post-LN
}

TEST_CASE("ex3 B2T: passes a gradient check w.r.t. its input and every parameter", "[coursework][ex3]") {
  Initializer init(Init::xavier, 5);
  B2TBlock block(test::tiny_config(Placement::post), init);
  test::jitter(block.named_parameters(), 0.2, 6);
  REQUIRE_PARAM_GRADCHECK(block.named_parameters(), {test::randn({2, 3, 4}, 7)},
                          [&](const std::vector<Var>& v) { return block.forward(v[0]); });
}

TEST_CASE("ex3 B2T: one gradient step of a B2T language model lowers its loss as predicted", "[coursework][ex3]") {
  B2TModel model(test::tiny_config(Placement::post));
  const IndexArray ids = {{0, 3, 1}, {4, 2, 2}}, targets = {{3, 1, 4}, {2, 2, 0}};
  const double lr = 1e-3;
  Tape tape;
  TapeScope scope(tape);
  Var loss = model.loss(ids, targets);
  const double before = loss.value()();
  loss.backward();
  // Every parameter receives a gradient (no sublayer left out or cut off), and a step of plain
  // gradient descent theta -= lr g lowers the loss by lr |g|^2 to first order.
  double g2 = 0.0;
  for (const NamedParameter& p : model.named_parameters()) {
    INFO(p.name);
    REQUIRE(norm(p.parameter.grad()) > 0.0);
    g2 += xt::sum(p.parameter.grad() * p.parameter.grad())();
  }
  for (NamedParameter p : model.named_parameters()) p.parameter.value() -= lr * p.parameter.grad();
  tape.reset();
  const double after = model.loss(ids, targets).value()();
  INFO("loss " << before << " -> " << after << ", predicted decrease " << lr * g2);
  REQUIRE(after < before);
  REQUIRE((before - after) == Approx(lr * g2).epsilon(0.05));
}
