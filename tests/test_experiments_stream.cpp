// The residual-stream split of analysis/stream_split.hpp (what build/bin/stream reports):
// only the facts the algebra fixes exactly, on tiny models. Trends along depth belong to the binary.
#include <cmath>

#include <xtensor/xview.hpp>

#include "check.hpp"
#include "engine/engine.hpp"
#include "analysis/stream_split.hpp"
#include "nn/transformer_lm.hpp"
#include "nn_gradcheck.hpp"
#include "nn/residual_edges.hpp"

namespace test_experiments_stream {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;
using namespace gs::analysis;

namespace {

// V=7, T=4, d=8, 2 heads, d_ff=16, 3 layers: positions emb, 0.mid, 0.out, ..., 2.out (7 of them).
ModelConfig small(const std::string& placement) {
  ModelConfig c{.vocab = 7, .context = 4, .d_model = 8, .heads = 2, .layers = 3, .d_ff = 16, .seed = 5};
  apply_placement(c, placement);
  return c;
}

const IndexArray ids = {{0, 3, 6, 2}, {5, 5, 1, 4}};
const IndexArray targets = {{3, 6, 2, 1}, {5, 1, 4, 0}};

// One forward and backward pass of the mean cross-entropy on `tape`, keeping the contributions.
std::vector<StreamPosition> forward_backward(TransformerLM& model, Tape& tape) {
  tape.keep_contributions = true;
  model.loss(ids, targets).backward();
  return stream_positions(model);
}

// The smallest and largest per-position RMS sqrt(mean_c x^2) of a (B, T, C) array.
std::pair<double, double> rms_range(const Array& x) {
  double lo = INFINITY, hi = 0.0;
  for (std::size_t b = 0; b < x.shape()[0]; ++b)
    for (std::size_t t = 0; t < x.shape()[1]; ++t) {
      const auto row = xt::view(x, b, t);
      const double r = std::sqrt(xt::mean(row * row)());
      lo = std::min(lo, r);
      hi = std::max(hi, r);
    }
  return {lo, hi};
}

}  // namespace

TEST_CASE("stream_positions lists emb, then each block's mid and output; the block marks the skip edge out of each",
          "[experiments][stream]") {
  for (const std::string& placement : placement_presets()) {
    INFO(placement);
    TransformerLM model(small(placement));
    Tape tape;
    TapeScope scope(tape);
    const std::vector<StreamPosition> p = forward_backward(model, tape);
    REQUIRE(p.size() == 7);
    REQUIRE(p[0].name == "emb");
    REQUIRE(p[0].value.index() == model.last.emb.index());
    for (std::size_t l = 0; l < 3; ++l) {
      const BlockTrace& t = model.blocks[l]->last;
      REQUIRE(p[2 * l + 1].name == "blocks." + std::to_string(l) + ".mid");
      REQUIRE(p[2 * l + 1].value.index() == t.mid.index());
      REQUIRE(p[2 * l + 2].value.index() == t.out.index());
      // The skip path starts at the position: its edge into the add, or into alpha * x for deepnorm,
      // is marked skip, and the add's other input is marked branch.
      for (const Var& sum : {t.attn_sum, t.mlp_sum}) {
        const Entry& add = tape.entry(sum.index());
        REQUIRE(tape.tag(sum.index(), 0) == skip_edge);
        REQUIRE(tape.tag(sum.index(), 1) == branch_out_edge);
        const int skip = add.inputs[0];
        const Var& position = sum.index() == t.attn_sum.index() ? p[2 * l].value : p[2 * l + 1].value;
        if (placement == "deepnorm") {
          REQUIRE(std::string(tape.entry(skip).op) == "mul");
          REQUIRE(tape.entry(skip).inputs[0] == position.index());
          REQUIRE(tape.tag(skip, 0) == skip_edge);
          REQUIRE(tape.tag(skip, 1) == EdgeTag{});  // alpha, a constant
        } else {
          REQUIRE(skip == position.index());
        }
      }
      REQUIRE_FALSE(p[2 * l].top);
      REQUIRE_FALSE(p[2 * l + 1].top);
    }
    REQUIRE(p[6].top);  // no sublayer reads it
  }
}

TEST_CASE("the identity and branch parts at every stream position sum to its gradient, every placement",
          "[experiments][stream]") {
  for (const std::string& placement : placement_presets()) {
    for (bool jittered : {false, true}) {
      INFO(placement << (jittered ? " with jittered parameters (ReZero's a != 0)" : " at init"));
      TransformerLM model(small(placement));
      if (jittered) test::jitter(model.named_parameters(), 0.3, 11);
      Tape tape;
      TapeScope scope(tape);
      const std::vector<StreamPosition> p = forward_backward(model, tape);
      for (std::size_t k = 0; k + 1 < p.size(); ++k) {
        INFO("position " << p[k].name);
        const SkipBranch s = split_skip_branch(p[k].value);
        REQUIRE(s.skip_parts == 1);  // one skip op sent one gradient
        REQUIRE(s.branch_parts >= 1);    // and the sublayer (or its LN) read it too
        REQUIRE(s.skip_parts + s.branch_parts == p[k].value.entry().contributions.size());
        REQUIRE(max_abs_diff(s.skip + s.branch, p[k].value.grad()) <= test::tol(1e-12, 1e-5));
      }
    }
  }
}

TEST_CASE("at init ReZero is the identity on the stream and every branch part of the gradient is exactly 0",
          "[experiments][stream][rezero]") {
  TransformerLM model(small("rezero"));
  Tape tape;
  TapeScope scope(tape);
  const std::vector<StreamPosition> p = forward_backward(model, tape);
  for (const auto& block : model.blocks) {
    REQUIRE(block->last.mid.value() == block->last.input.value());
    REQUIRE(block->last.out.value() == block->last.input.value());
  }
  for (std::size_t k = 0; k + 1 < p.size(); ++k) {
    INFO("position " << p[k].name);
    // d/dx [a F(x)] = a F'(x) = 0 at a = 0: the branch sends exact zeros, the skip the whole gradient.
    const SkipBranch s = split_skip_branch(p[k].value);
    REQUIRE(xt::all(xt::equal(s.branch, 0.0)));
    REQUIRE(xt::all(xt::equal(s.skip, p[k].value.grad())));
  }
  // So the gradient at the top reaches emb unchanged, bit for bit.
  REQUIRE(xt::all(xt::equal(p.front().value.grad(), p.back().value.grad())));
}

TEST_CASE("with LN weight 1 and bias 0, Post-LN and DeepNorm streams have per-position RMS 1 after every sublayer",
          "[experiments][stream][post]") {
  // tests/test_nn_model.cpp checks Post-LN's block outputs; this adds the mids, DeepNorm, and the
  // average that the binary prints. eps = 1e-5 keeps each RMS just below 1.
  for (const std::string placement : {"post", "deepnorm"}) {
    INFO(placement);
    ModelConfig c = small(placement);
    c.d_model = 16;
    c.d_ff = 64;
    TransformerLM model(c);
    Tape tape;
    TapeScope scope(tape);
    model.logits(ids);
    for (const StreamPosition& p : stream_positions(model)) {
      if (p.name == "emb") continue;
      INFO("position " << p.name);
      const auto [lo, hi] = rms_range(p.value.value());
      REQUIRE(lo >= 1.0 - 1e-4);
      REQUIRE(hi <= 1.0);
      REQUIRE(mean_rms(p.value.value()) == Approx(1.0).margin(1e-4));
      REQUIRE(mean_l2(p.value.value()) == Approx(std::sqrt(16.0) * mean_rms(p.value.value())).epsilon(1e-12));
    }
  }
}

TEST_CASE("mean_rms and mean_l2 average the per-position norms over the last axis", "[experiments][stream]") {
  Array x = {{{3.0, 4.0}, {0.0, 0.0}}, {{1.0, -1.0}, {-6.0, 8.0}}};  // (2, 2, 2)
  // per position: L2 = 5, 0, sqrt 2, 10;  RMS = L2 / sqrt 2
  REQUIRE(mean_l2(x) == Approx((15.0 + std::sqrt(2.0)) / 4.0).epsilon(1e-15));
  REQUIRE(mean_rms(x) == Approx((15.0 + std::sqrt(2.0)) / 4.0 / std::sqrt(2.0)).epsilon(1e-15));
}

TEST_CASE("where the stream is the plain sum, the skip part at a sublayer's input is exactly the gradient "
          "at its output",
          "[experiments][stream][pre]") {
  // Pre, peri and ReZero: h = x + branch(x), so the add hands dL/dh to x unchanged: identity(x) = dL/dh.
  // Chained over the stack, dL/d(emb) = dL/d(top) + the sum of every branch part. At block level this
  // means identity(x_l) = dL/dh_l (the block's mid), not dL/dy_l: dL/dy_l lacks the MLP's branch part.
  for (const std::string placement : {"pre", "peri", "rezero"}) {
    INFO(placement);
    TransformerLM model(small(placement));
    test::jitter(model.named_parameters(), 0.3, 13);  // ReZero's branches on too
    Tape tape;
    TapeScope scope(tape);
    const std::vector<StreamPosition> p = forward_backward(model, tape);
    Array telescoped = p.back().value.grad();
    for (std::size_t k = 0; k + 1 < p.size(); ++k) {
      INFO("position " << p[k].name);
      const SkipBranch s = split_skip_branch(p[k].value);
      REQUIRE(xt::all(xt::equal(s.skip, p[k + 1].value.grad())));
      telescoped += s.branch;
    }
    REQUIRE(max_abs_diff(telescoped, p.front().value.grad()) <= test::tol(1e-12, 1e-5));
  }
  // Post and DeepNorm: the stream is LN(sum), so the skip path hands back dL/d(sum) -- the gradient
  // after LN's backward -- times alpha for DeepNorm; the LN Jacobian sits on the identity path.
  for (const std::string placement : {"post", "deepnorm"}) {
    INFO(placement);
    TransformerLM model(small(placement));
    Tape tape;
    TapeScope scope(tape);
    const std::vector<StreamPosition> p = forward_backward(model, tape);
    for (std::size_t l = 0; l < model.blocks.size(); ++l) {
      const BlockTrace& t = model.blocks[l]->last;
      const Block& block = *model.blocks[l];
      const SkipBranch attn = split_skip_branch(p[2 * l].value);
      const SkipBranch mlp = split_skip_branch(p[2 * l + 1].value);
      // (float32: alpha is a double, so the tape's product rounds differently)
      REQUIRE(xt::allclose(attn.skip, Array(t.attn_sum.grad() * block.alpha), test::tol(0.0, 1e-6), 0.0));
      REQUIRE(xt::allclose(mlp.skip, Array(t.mlp_sum.grad() * block.alpha), test::tol(0.0, 1e-6), 0.0));
    }
  }
}

TEST_CASE("split_skip_branch says what is wrong: no contributions kept, or a position no skip edge leaves",
          "[experiments][stream][errors]") {
  TransformerLM model(small("pre"));
  Tape tape;
  TapeScope scope(tape);
  model.loss(ids, targets).backward();  // keep_contributions off
  const std::vector<StreamPosition> p = stream_positions(model);
  REQUIRE_THROWS_WITH(split_skip_branch(p[0].value), Catch::Contains("keep_contributions"));

  tape.reset();
  const std::vector<StreamPosition> q = forward_backward(model, tape);
  REQUIRE(q.back().top);
  REQUIRE_THROWS_WITH(split_skip_branch(q.back().value), Catch::Contains("no edge tagged skip_edge"));
}

}  // namespace test_experiments_stream
