// The check of exercise, for the student: scripts/exercise 9 (docs/coursework.md#ex9)
#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "exercise.hpp"
#include "engine/engine.hpp"
#include "../nn_gradcheck.hpp"
#include "ex9_hybridnorm.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"

namespace check_ex9_hybridnorm {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;
using gs::coursework::HybridNormBlock;

namespace {

// ---- the block's formula on plain arrays, apart from the engine ----

// y = x W + b over the last axis: x (B, T, in), W (in, out), b (out,).
Array affine(const Array& x, const Parameter& W, const Parameter& b) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], in = W.shape()[0], out = W.shape()[1];
  Array y = Array::from_shape({B, T, out});
  for (std::size_t i = 0; i < B; ++i)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t o = 0; o < out; ++o) {
        double s = b.value()(o);
        for (std::size_t k = 0; k < in; ++k) s += x(i, t, k) * W.value()(k, o);
        y(i, t, o) = s;
      }
  return y;
}

// Every run of d consecutive elements normalized (mean 0, biased variance, eps 1e-5), times w plus b.
Array normalized(Array a, std::size_t d, const LayerNorm& norm) {
  for (std::size_t r = 0; r < a.size() / d; ++r) {
    Real* row = a.data() + r * d;
    double mu = 0.0, var = 0.0;
    for (std::size_t i = 0; i < d; ++i) mu += row[i] / static_cast<double>(d);
    for (std::size_t i = 0; i < d; ++i) var += (row[i] - mu) * (row[i] - mu) / static_cast<double>(d);
    for (std::size_t i = 0; i < d; ++i)
      row[i] = (row[i] - mu) / std::sqrt(var + 1e-5) * norm.weight.value()(i) + norm.bias.value()(i);
  }
  return a;
}

// HybridNorm's block, written out: QKV-Norm causal attention, then Post-Norm in front of the MLP.
Array reference(const HybridNormBlock& b, const Array& x) {
  const std::size_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2], H = b.attn.heads, dh = C / H;
  const Array q = normalized(affine(x, b.attn.q.weight, b.attn.q.bias), dh, b.q_norm);
  const Array k = normalized(affine(x, b.attn.k.weight, b.attn.k.bias), dh, b.k_norm);
  const Array v = normalized(affine(x, b.attn.v.weight, b.attn.v.bias), dh, b.v_norm);
  Array att = xt::zeros<Real>({B, T, C});
  for (std::size_t n = 0; n < B; ++n)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < T; ++i) {
        std::vector<double> p(i + 1);
        for (std::size_t j = 0; j <= i; ++j) {  // the past and the position itself
          double s = 0.0;
          for (std::size_t e = 0; e < dh; ++e) s += q(n, i, h * dh + e) * k(n, j, h * dh + e);
          p[j] = s / std::sqrt(static_cast<double>(dh));
        }
        const double m = *std::max_element(p.begin(), p.end());
        double z = 0.0;
        for (double& pj : p) z += (pj = std::exp(pj - m));
        for (std::size_t j = 0; j <= i; ++j)
          for (std::size_t e = 0; e < dh; ++e) att(n, i, h * dh + e) += p[j] / z * v(n, j, h * dh + e);
      }
  const Array h = x + affine(att, b.attn.o.weight, b.attn.o.bias);
  const Array n = normalized(h, C, b.ln2);
  Array hidden = affine(n, b.mlp.fc1.weight, b.mlp.fc1.bias);
  for (Real& a : hidden) a = a * 0.5 * (1.0 + std::erf(a / std::numbers::sqrt2));  // GELU
  return n + affine(hidden, b.mlp.fc2.weight, b.mlp.fc2.bias);
}

Array output(HybridNormBlock& block, const Array& x) {
  Tape tape;
  TapeScope scope(tape);
  return block.forward(tape.constant(x)).value();
}

// A language model whose blocks are HybridNorm blocks: tok_emb + pos_emb, the blocks, ln_f, a linear head.
struct HybridNormModel : Module {
  explicit HybridNormModel(const ModelConfig& c)
      : init(c.init, c.seed), tok(c.vocab, c.d_model, init), pos(c.context, c.d_model, init), ln_f(c.d_model),
        head(c.d_model, c.vocab, init) {
    add_child("tok_emb", tok);
    add_child("pos_emb", pos);
    for (std::size_t i = 0; i < c.layers; ++i) {
      blocks.push_back(std::make_unique<HybridNormBlock>(c, init));
      add_child("blocks." + std::to_string(i), *blocks.back());
    }
    add_child("ln_f", ln_f);
    add_child("head", head);
  }
  Var loss(const IndexArray& ids, const IndexArray& targets) {
    Var x = tok.forward(ids) + pos.forward(ids.shape()[1]);  // (B, T, C)
    for (auto& block : blocks) x = block->forward(x);        // (B, T, C)
    return cross_entropy(head.forward(ln_f.forward(x)), targets);
  }
  Initializer init;
  Embedding tok;
  PositionalEmbedding pos;
  std::vector<std::unique_ptr<HybridNormBlock>> blocks;
  LayerNorm ln_f;
  Linear head;
};

}  // namespace

EXERCISE_CASE("ex9", "HybridNorm: its parameters have the names and shapes of ex9_hybridnorm.hpp") {
  Initializer init(Init::xavier, 1);
  HybridNormBlock block(test::gradcheck_config("post"), init);  // d = 4, 2 heads: dh = 2, d_ff = 8
  std::vector<std::pair<std::string, Shape>> got, expected;
  for (const NamedParameter& p : block.named_parameters()) got.push_back({p.name, p.parameter.shape()});
  for (const char* p : {"q", "k", "v", "o"}) {
    expected.push_back({std::string("attn.") + p + ".weight", {4, 4}});
    expected.push_back({std::string("attn.") + p + ".bias", {4}});
  }
  for (const char* n : {"q_norm", "k_norm", "v_norm"}) {
    expected.push_back({std::string(n) + ".weight", {2}});
    expected.push_back({std::string(n) + ".bias", {2}});
  }
  expected.push_back({"ln2.weight", {4}});
  expected.push_back({"ln2.bias", {4}});
  expected.push_back({"mlp.fc1.weight", {4, 8}});
  expected.push_back({"mlp.fc1.bias", {8}});
  expected.push_back({"mlp.fc2.weight", {8, 4}});
  expected.push_back({"mlp.fc2.bias", {4}});
  std::sort(got.begin(), got.end());
  std::sort(expected.begin(), expected.end());
  REQUIRE(got == expected);
}

EXERCISE_CASE("ex9", "HybridNorm: the block computes the formula") {
  // With every parameter perturbed (no norm weight 1, no bias 0), against the formula on plain arrays.
  for (const auto& [d, heads] : {std::pair{4, 2}, std::pair{6, 3}}) {
    ModelConfig c = test::gradcheck_config("post");
    c.d_model = static_cast<std::size_t>(d);
    c.heads = static_cast<std::size_t>(heads);
    INFO("d = " << d << ", heads = " << heads);
    Initializer init(Init::xavier, 2);
    HybridNormBlock block(c, init);
    test::jitter(block.named_parameters(), 0.3, 3);
    const Array x = test::randn({2, 5, c.d_model}, 4);
    const Array y = output(block, x), expected = reference(block, x);
    REQUIRE(y.shape() == expected.shape());
    REQUIRE_CLOSE(y, expected, test::tol(1e-10, 1e-4), test::tol(1e-12, 1e-5));
  }
}

EXERCISE_CASE("ex9", "HybridNorm: each head's queries and values are normalized, so their scale does not matter") {
  // Scaling one head's columns of Wq and bq (or of Wv and bv) scales that head's q (or v) alone; its
  // norm takes the scale out again, up to eps = 1e-5 against the variance (hence 1e-4, not 1e-12).
  ModelConfig c = test::gradcheck_config("post");
  c.d_model = 8;
  c.heads = 2;
  Initializer init(Init::xavier, 5);
  HybridNormBlock block(c, init);
  test::jitter(block.named_parameters(), 0.3, 6);
  const Array x = test::randn({2, 4, 8}, 7);
  const Array y = output(block, x);
  for (Linear* projection : {&block.attn.q, &block.attn.v}) {
    const Array W = projection->weight.value(), b = projection->bias.value();
    for (std::size_t col = 0; col < 4; ++col) {  // head 0: columns 0..3
      for (std::size_t row = 0; row < 8; ++row) projection->weight.value()(row, col) *= 3.0;
      projection->bias.value()(col) *= 3.0;
    }
    INFO((projection == &block.attn.q ? "q" : "v") << " of head 0 times 3");
    REQUIRE_CLOSE(output(block, x), y, 1e-4, 1e-4);
    projection->weight.value() = W;
    projection->bias.value() = b;
  }
}

EXERCISE_CASE("ex9", "HybridNorm: passes a gradient check w.r.t. its input and every parameter") {
  Initializer init(Init::xavier, 8);
  HybridNormBlock block(test::gradcheck_config("post"), init);
  test::jitter(block.named_parameters(), 0.2, 9);
  REQUIRE_PARAM_GRADCHECK(block.named_parameters(), {test::randn({2, 3, 4}, 10)},
                          [&](const std::vector<Var>& v) { return block.forward(v[0]); });
}

EXERCISE_CASE("ex9", "HybridNorm: one gradient step of a HybridNorm language model lowers its loss as predicted") {
  HybridNormModel model(test::gradcheck_config("post"));
  test::jitter(model.named_parameters(), 0.1, 11);
  const IndexArray ids = {{0, 3, 1}, {4, 2, 2}}, targets = {{3, 1, 4}, {2, 2, 0}};
  const double lr = 1e-3;
  Tape tape;
  TapeScope scope(tape);
  Var loss = model.loss(ids, targets);
  const double before = loss.value()();
  loss.backward();
  // Every parameter receives a gradient (no sublayer left out or cut off), except k_norm's bias: it adds
  // the same q . b_k to every score of a row, which the softmax ignores, so its gradient is 0.
  double g2 = 0.0;
  for (const NamedParameter& p : model.named_parameters()) {
    INFO(p.name);
    if (p.name.ends_with("k_norm.bias"))
      REQUIRE(norm(p.parameter.grad()) < test::tol(1e-12, 1e-5));
    else
      REQUIRE(norm(p.parameter.grad()) > 1e-9);
    g2 += xt::sum(p.parameter.grad() * p.parameter.grad())();
  }
  // A step of plain gradient descent theta -= lr g lowers the loss by lr |g|^2 to first order.
  for (NamedParameter p : model.named_parameters()) p.parameter.value() -= lr * p.parameter.grad();
  tape.reset();
  const double after = model.loss(ids, targets).value()();
  INFO("loss " << before << " -> " << after << ", predicted decrease " << lr * g2);
  REQUIRE(after < before);
  REQUIRE((before - after) == Approx(lr * g2).epsilon(0.05));
}

}  // namespace check_ex9_hybridnorm
