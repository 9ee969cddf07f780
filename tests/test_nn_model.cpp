// TransformerLM: parameter names and shapes, initialisation, gradient checks of every zoo member, the
// causal mask end to end, Post-LN's normalized stream, and errors for bad input.
#include <cmath>
#include <map>

#include <xtensor/xview.hpp>

#include "check.hpp"
#include "engine/engine.hpp"
#include "nn/layernorm.hpp"
#include "nn/transformer_lm.hpp"
#include "nn_gradcheck.hpp"

namespace test_nn_model {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;

namespace {

std::map<std::string, Shape> shapes(const TransformerLM& model) {
  std::map<std::string, Shape> out;
  for (const NamedParameter& p : model.named_parameters()) out[p.name] = p.parameter.shape();
  return out;
}

// The names and shapes every placement with ln1 and ln2 has, with (V, T, d, d_ff) = (5, 3, 4, 8).
std::map<std::string, Shape> common_shapes() {
  std::map<std::string, Shape> s{{"tok_emb.weight", {5, 4}}, {"pos_emb.weight", {3, 4}},
                                 {"head.weight", {4, 5}},    {"head.bias", {5}}};
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    for (const char* ln : {"ln1", "ln2"}) {
      s[b + ln + ".weight"] = {4};
      s[b + ln + ".bias"] = {4};
    }
    for (const char* p : {"q", "k", "v", "o"}) {
      s[b + "attn." + p + ".weight"] = {4, 4};
      s[b + "attn." + p + ".bias"] = {4};
    }
    s[b + "mlp.fc1.weight"] = {4, 8};
    s[b + "mlp.fc1.bias"] = {8};
    s[b + "mlp.fc2.weight"] = {8, 4};
    s[b + "mlp.fc2.bias"] = {4};
  }
  return s;
}

const IndexArray ids = {{0, 3, 4}, {2, 2, 1}};
const IndexArray targets = {{3, 4, 0}, {2, 1, 1}};

}  // namespace

TEST_CASE("parameter names and shapes are exactly as specified", "[nn][model][names]") {
  auto post = common_shapes();
  auto pre = post;
  pre["ln_f.weight"] = {4};
  pre["ln_f.bias"] = {4};
  REQUIRE(shapes(TransformerLM(test::gradcheck_config("post"))) == post);
  REQUIRE(shapes(TransformerLM(test::gradcheck_config("pre"))) == pre);
  REQUIRE(shapes(TransformerLM(test::gradcheck_config("deepnorm"))) == post);
  REQUIRE(shapes(TransformerLM(test::gradcheck_config("b2t"))) == post);
  REQUIRE(shapes(TransformerLM(test::gradcheck_config("mixln"))) == pre);
  REQUIRE(shapes(TransformerLM(test::gradcheck_config("pre/layer/lns"))) == pre);

  auto peri = pre;
  for (int i = 0; i < 2; ++i)
    for (const char* ln : {"ln_attn_out", "ln_mlp_out"})
      for (const char* p : {".weight", ".bias"}) peri["blocks." + std::to_string(i) + "." + ln + p] = {4};
  REQUIRE(shapes(TransformerLM(test::gradcheck_config("peri"))) == peri);

  auto rezero = post;
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    for (const char* ln : {"ln1", "ln2"})
      for (const char* p : {".weight", ".bias"}) rezero.erase(b + ln + p);
    rezero[b + "rezero_attn"] = {1};
    rezero[b + "rezero_mlp"] = {1};
  }
  REQUIRE(shapes(TransformerLM(test::gradcheck_config("rezero"))) == rezero);
  auto pre_rezero = pre;  // ReZero with Pre-LN norms: both sets
  for (int i = 0; i < 2; ++i)
    for (const char* a : {"rezero_attn", "rezero_mlp"}) pre_rezero["blocks." + std::to_string(i) + "." + a] = {1};
  REQUIRE(shapes(TransformerLM(test::gradcheck_config("pre/layer/rezero"))) == pre_rezero);

  // Admin: omega [d] per sublayer. RMSNorm: weight only. DyT: weight, bias and alpha [1].
  auto admin = post;
  for (int i = 0; i < 2; ++i)
    for (const char* a : {"admin_attn", "admin_mlp"}) admin["blocks." + std::to_string(i) + "." + a] = {4};
  REQUIRE(shapes(TransformerLM(test::gradcheck_config("post/layer/admin"))) == admin);
  auto rms = pre, dyt = pre;
  for (const std::string norm : {"blocks.0.ln1", "blocks.0.ln2", "blocks.1.ln1", "blocks.1.ln2", "ln_f"}) {
    rms.erase(norm + ".bias");
    dyt[norm + ".alpha"] = {1};
  }
  REQUIRE(shapes(TransformerLM(test::gradcheck_config("pre/rms"))) == rms);
  REQUIRE(shapes(TransformerLM(test::gradcheck_config("pre/dyt"))) == dyt);
  auto no_norm = rezero;
  for (int i = 0; i < 2; ++i)
    for (const char* a : {"rezero_attn", "rezero_mlp"}) no_norm.erase("blocks." + std::to_string(i) + "." + a);
  REQUIRE(shapes(TransformerLM(test::gradcheck_config("pre/none"))) == no_norm);

  // The listing order follows the model: embeddings, blocks in order, ln_f, head.
  TransformerLM model(test::gradcheck_config("pre"));
  const auto named = model.named_parameters();
  REQUIRE(named.front().name == "tok_emb.weight");
  REQUIRE(named[2].name == "blocks.0.ln1.weight");
  REQUIRE(named.back().name == "head.bias");
  for (const NamedParameter& p : named) REQUIRE(p.parameter.name() == p.name);  // name_parameters() ran
}

TEST_CASE("parameter_count adds up every tensor", "[nn][model][names]") {
  const std::size_t V = 5, T = 3, d = 4, f = 8, L = 2;
  const std::size_t block = 2 * 2 * d + 4 * (d * d + d) + (d * f + f) + (f * d + d);
  const std::size_t outer = V * d + T * d + d * V + V;
  REQUIRE(TransformerLM(test::gradcheck_config("post")).parameter_count() == outer + L * block);
  REQUIRE(TransformerLM(test::gradcheck_config("pre")).parameter_count() == outer + L * block + 2 * d);
  REQUIRE(TransformerLM(test::gradcheck_config("peri")).parameter_count() == outer + L * (block + 4 * d) + 2 * d);
  REQUIRE(TransformerLM(test::gradcheck_config("rezero")).parameter_count() == outer + L * (block - 4 * d + 2));
  REQUIRE(TransformerLM(test::gradcheck_config("post/layer/admin")).parameter_count() == outer + L * (block + 2 * d));
  REQUIRE(TransformerLM(test::gradcheck_config("pre/rms")).parameter_count() == outer + L * (block - 2 * d) + d);
  REQUIRE(TransformerLM(test::gradcheck_config("pre/dyt")).parameter_count() == outer + L * (block + 2) + 2 * d + 1);
}

TEST_CASE("initialisation is seeded, reproducible and follows the scheme", "[nn][model][init]") {
  TransformerLM a(test::gradcheck_config("pre")), b(test::gradcheck_config("pre"));
  ModelConfig other = test::gradcheck_config("pre");
  other.seed = 2;
  TransformerLM c(other);
  const auto pa = a.named_parameters(), pb = b.named_parameters(), pc = c.named_parameters();
  bool any_differs = false;
  for (std::size_t i = 0; i < pa.size(); ++i) {
    REQUIRE(pa[i].parameter.value() == pb[i].parameter.value());
    any_differs = any_differs || pa[i].parameter.value() != pc[i].parameter.value();
  }
  REQUIRE(any_differs);
  REQUIRE((dynamic_cast<const LayerNorm&>(*a.blocks[0]->ln1).weight.value() == Array(xt::ones<Real>({4}))));
  REQUIRE((a.blocks[0]->attn.q.bias.value() == Array(xt::zeros<Real>({4}))));
  REQUIRE(xt::amax(xt::abs(a.head.weight.value()))() <= std::sqrt(6.0 / 9.0));

  ModelConfig big = test::gradcheck_config("pre", Init::gpt2);
  big.d_model = 64;
  big.d_ff = 256;
  big.vocab = 64;
  TransformerLM g(big);
  auto rms = [](const Array& x) { return std::sqrt(xt::mean(x * x)()); };
  REQUIRE(rms(g.blocks[1]->mlp.fc1.weight.value()) == Approx(0.02).epsilon(0.05));
  REQUIRE(rms(g.tok_emb.weight.value()) == Approx(0.02).epsilon(0.1));
  big.init = Init::xavier;
  TransformerLM x(big);
  REQUIRE(rms(x.tok_emb.weight.value()) == Approx(1.0).epsilon(0.1));
}

TEST_CASE("a 2-layer TransformerLM of every zoo member passes a gradient check of every parameter",
          "[nn][model][gradcheck]") {
  for (const std::string& member : test::zoo()) {
    INFO("placement " << member);
    TransformerLM model(test::gradcheck_config(member));
    test::jitter(model.named_parameters(), 0.2, 3);  // off the special point (ReZero a = 0, LN 1/0)
    REQUIRE_PARAM_GRADCHECK(model.named_parameters(), {},
                            [&](const std::vector<Var>&) { return model.loss(ids, targets); });
  }
}

TEST_CASE("fused and composite norms give the same model to 1e-12", "[nn][model][layernorm]") {
  for (const std::string& member : test::zoo()) {
    INFO(member);
    TransformerLM model(test::gradcheck_config(member));
    test::jitter(model.named_parameters(), 0.2, 4);
    std::vector<Array> grads[2];
    double losses[2];
    for (int fused = 0; fused < 2; ++fused) {
      model.set_fused_norms(fused == 1);
      model.zero_grad();
      Tape tape;
      TapeScope scope(tape);
      Var loss = model.loss(ids, targets);
      loss.backward();
      losses[fused] = loss.value()();
      for (const NamedParameter& p : model.named_parameters()) grads[fused].push_back(p.parameter.grad());
    }
    REQUIRE(std::abs(losses[0] - losses[1]) <= test::tol(1e-12, 1e-5));
    for (std::size_t i = 0; i < grads[0].size(); ++i)
      REQUIRE(xt::amax(xt::abs(grads[0][i] - grads[1][i]))() <= test::tol(1e-12, 1e-5));
  }
}

TEST_CASE("the model is causal: a later token does not change earlier logits", "[nn][model][causal]") {
  for (const std::string& member : test::zoo()) {
    INFO(member);
    ModelConfig c = test::gradcheck_config(member);
    c.context = 6;
    TransformerLM model(c);
    test::jitter(model.named_parameters(), 0.2, 5);  // ReZero's branches must do something
    Tape tape;
    TapeScope scope(tape);
    IndexArray a = {{1, 2, 3, 4, 0, 1}};
    IndexArray b = a;
    b(0, 4) = 3;
    const Array la = model.logits(a).value(), lb = model.logits(b).value();
    REQUIRE(shape_of(la) == Shape{1, 6, 5});
    REQUIRE((xt::view(la, 0, xt::range(0, 4)) == xt::view(lb, 0, xt::range(0, 4))));
    REQUIRE((xt::view(la, 0, 4) != xt::view(lb, 0, 4)));
  }
}

TEST_CASE("Post-LN's residual stream has RMS 1 at every position after every block", "[nn][model][post]") {
  ModelConfig c = test::gradcheck_config("post");
  c.d_model = 16;
  c.d_ff = 64;
  c.layers = 3;
  c.context = 8;
  TransformerLM model(c);
  Tape tape;
  TapeScope scope(tape);
  IndexArray in = {{0, 1, 2, 3, 4, 0, 1, 2}, {4, 4, 3, 3, 2, 2, 1, 0}};
  model.logits(in);
  for (const auto& block : model.blocks) {
    const Array& y = block->last.out.value();  // (B, T, C)
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t t = 0; t < 8; ++t) {
        const auto row = xt::view(y, b, t);
        REQUIRE(std::sqrt(xt::mean(row * row)()) == Approx(1.0).margin(1e-4));
      }
  }
}

TEST_CASE("the model's loss is the mean cross-entropy and the trace names the stream", "[nn][model]") {
  TransformerLM model(test::gradcheck_config("pre"));
  Tape tape;
  TapeScope scope(tape);
  Var loss = model.loss(ids, targets);
  const Array& z = model.last.logits.value();
  double expected = 0.0;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 3; ++t) {
      double s = 0.0;
      for (std::size_t v = 0; v < 5; ++v) s += std::exp(z(b, t, v));
      expected += std::log(s) - z(b, t, targets(b, t));
    }
  REQUIRE(loss.value()() == Approx(expected / 6.0).epsilon(test::tol(1e-12, 1e-5)));
  REQUIRE(model.last.emb.entry().label == "emb");
  REQUIRE(model.last.final_norm.entry().label == "ln_f");
  REQUIRE(model.blocks[1]->last.input.index() == model.blocks[0]->last.out.index());
  REQUIRE_FALSE(TransformerLM(test::gradcheck_config("post")).has_final_norm());

  // A sequence shorter than the context uses the first T rows of pos_emb; the others get no gradient.
  tape.reset();
  model.zero_grad();
  Var short_loss = model.loss(IndexArray{{1, 2}}, IndexArray{{2, 3}});
  REQUIRE(model.last.logits.shape() == Shape{1, 2, 5});
  short_loss.backward();
  const Array& g = model.pos_emb.weight.grad();
  REQUIRE(xt::amax(xt::abs(xt::view(g, 2)))() == 0.0);
  REQUIRE(xt::amax(xt::abs(xt::view(g, 1)))() > 0.0);
}

TEST_CASE("bad input to the model throws naming the op, the shapes and the call site", "[nn][model][errors]") {
  TransformerLM model(test::gradcheck_config("pre"));
  Tape tape;
  TapeScope scope(tape);
  REQUIRE_THROWS_WITH(model.logits(IndexArray{{0, 5}}),
                      Catch::Contains("Embedding at test_nn_model.cpp") && Catch::Contains("token id 5") &&
                          Catch::Contains("ids (1, 2)"));
  REQUIRE_THROWS_WITH(model.logits(IndexArray{{0, -1}}), Catch::Contains("-1"));
  REQUIRE_THROWS_WITH(model.logits(IndexArray{{0, 1, 2, 3}}),
                      Catch::Contains("TransformerLM.logits at") && Catch::Contains("(1, 4)") &&
                          Catch::Contains("context = 3"));
  REQUIRE_THROWS_WITH(model.logits(IndexArray{0, 1}), Catch::Contains("(B, T)") && Catch::Contains("(2,)"));
  REQUIRE_THROWS_WITH(model.loss(ids, IndexArray{{0, 1}}),
                      Catch::Contains("TransformerLM.loss at test_nn_model.cpp") && Catch::Contains("(1, 2)"));
  REQUIRE_THROWS_WITH(model.loss(ids, IndexArray{{0, 1, 9}, {0, 0, 0}}), Catch::Contains("target 9"));
  ModelConfig bad = test::gradcheck_config("pre");
  bad.heads = 3;
  REQUIRE_THROWS_WITH(TransformerLM(bad), Catch::Contains("TransformerLM") && Catch::Contains("heads 3"));
}

}  // namespace test_nn_model
