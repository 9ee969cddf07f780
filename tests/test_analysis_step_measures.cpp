// The per-step measures of dynamics (analysis/step_measures.hpp): the update ratio of each
// parameter group and the entropy of each attention head, against values computed here by hand.
#include <cmath>
#include <string>
#include <vector>

#include "check.hpp"
#include "engine/engine.hpp"
#include "analysis/step_measures.hpp"

using namespace gs;
using namespace gs::analysis;

namespace {

nn::TransformerLM tiny(const std::string& placement) {
  nn::ModelConfig c{.vocab = 8, .context = 6, .d_model = 8, .heads = 2, .layers = 2, .seed = 5};
  nn::apply_placement(c, placement);
  return nn::TransformerLM(c);
}

IndexArray ids(std::size_t B, std::size_t T) {  // (B, T)
  IndexArray t = xt::zeros<std::int64_t>({B, T});
  for (std::size_t i = 0; i < B * T; ++i) t.flat(i) = static_cast<std::int64_t>((3 * i + 1) % 8);
  return t;
}

}  // namespace

TEST_CASE("update groups: embedding, each block's attention, MLP and rest, output", "[step_measures]") {
  REQUIRE(update_group_names(2) ==
          std::vector<std::string>{"emb", "b0.attn", "b0.mlp", "b0.rest", "b1.attn", "b1.mlp", "b1.rest", "out"});
  REQUIRE(update_group("tok_emb.weight", 2) == 0);
  REQUIRE(update_group("blocks.0.attn.q.weight", 2) == 1);
  REQUIRE(update_group("blocks.0.mlp.fc2.bias", 2) == 2);
  REQUIRE(update_group("blocks.0.ln1.weight", 2) == 3);
  REQUIRE(update_group("blocks.1.attn.o.bias", 2) == 4);
  REQUIRE(update_group("blocks.1.ln2.bias", 2) == 6);
  REQUIRE(update_group("head.weight", 2) == 7);
  REQUIRE(update_group("ln_f.weight", 2) == 7);
}

TEST_CASE("update_ratios: |W after - W before| / |W before| over each group's parameters", "[step_measures]") {
  nn::TransformerLM model = tiny("pre");
  const std::vector<Array> before = parameter_values(model);
  // Move only block 1's MLP: fc1.weight by +0.5 in every entry.
  double w_sq = 0.0, step_sq = 0.0;
  for (nn::NamedParameter p : model.named_parameters())  // a copy of the handle: the value is shared
    if (p.name.rfind("blocks.1.mlp.", 0) == 0) {
      w_sq += std::pow(norm(p.parameter.value()), 2);
      if (p.name == "blocks.1.mlp.fc1.weight") {
        p.parameter.value() += 0.5;
        step_sq += 0.25 * static_cast<double>(p.parameter.value().size());
      }
    }
  const std::vector<double> r = update_ratios(before, model);
  REQUIRE(r.size() == 8);
  for (std::size_t g = 0; g < r.size(); ++g) {
    INFO(update_group_names(2)[g]);
    if (g == 5)
      REQUIRE(r[g] == Approx(std::sqrt(step_sq / w_sq)).epsilon(1e-12));
    else
      REQUIRE(r[g] == 0.0);
  }
}

TEST_CASE("attention_entropy: uniform attention gives the mean over t of log(t + 1); learned attention less",
          "[step_measures]") {
  nn::TransformerLM model = tiny("post");
  const std::size_t B = 2, T = 6;
  const std::vector<double> learned = [&] {
    Tape tape;
    TapeScope scope(tape);
    model.logits(ids(B, T));
    return attention_entropy(model);
  }();
  // Zero queries and keys: every score is 0, so position t attends uniformly to its t + 1 keys.
  for (const auto& block : model.blocks)
    for (nn::Linear* l : {&block->attn.q, &block->attn.k}) {
      l->weight.value().fill(0.0);
      l->bias.value().fill(0.0);
    }
  Tape tape;
  TapeScope scope(tape);
  model.logits(ids(B, T));
  const std::vector<double> uniform = attention_entropy(model);
  double expected = 0.0;
  for (std::size_t t = 0; t < T; ++t) expected += std::log(static_cast<double>(t + 1)) / static_cast<double>(T);
  REQUIRE(uniform.size() == 4);  // 2 blocks x 2 heads
  REQUIRE(learned.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    REQUIRE(uniform[i] == Approx(expected).epsilon(1e-12));
    REQUIRE(learned[i] < expected);  // uniform is the largest entropy a causal row can have
    REQUIRE(learned[i] > 0.0);
  }
}
