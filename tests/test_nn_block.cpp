// The residual block under every placement: gradient checks, the stream labels, ReZero's identity at
// init, DeepNorm's alpha and beta.
#include <cmath>

#include "check.hpp"
#include "nn/block.hpp"
#include "nn_gradcheck.hpp"

using namespace gs;
using namespace gs::nn;

TEST_CASE("a block of every placement passes gradient checks w.r.t. its input and parameters", "[nn][block]") {
  for (Placement placement : all_placements) {
    for (bool fused : {true, false}) {
      INFO("placement " << to_string(placement) << (fused ? " fused" : " composite"));
      Initializer init(Init::xavier, 1);
      Block block(test::tiny_config(placement), 0, init);
      block.set_fused_norms(fused);
      test::jitter(block.named_parameters(), 0.2, 7);  // ReZero's a != 0, LN weights != 1
      REQUIRE_PARAM_GRADCHECK(block.named_parameters(), {test::randn({2, 3, 4}, 2)},
                              [&](const std::vector<Var>& v) { return block.forward(v[0]); });
    }
  }
}

TEST_CASE("a block labels its residual stream on the tape", "[nn][block]") {
  for (Placement placement : all_placements) {
    INFO(to_string(placement));
    Initializer init(Init::xavier, 1);
    Block block(test::tiny_config(placement), 1, init);
    Tape tape;
    TapeScope scope(tape);
    Var x = tape.leaf(test::randn({2, 3, 4}, 2));
    Var y = block.forward(x);
    REQUIRE(y.index() == block.last.out.index());
    REQUIRE(block.last.input.index() == x.index());
    REQUIRE(block.last.mid.entry().label == "blocks.1.mid");
    REQUIRE(block.last.out.entry().label == "blocks.1.out");
    REQUIRE(block.last.attn_branch.entry().label == "blocks.1.attn_branch");
    REQUIRE(block.last.mlp_branch.entry().label == "blocks.1.mlp_branch");
    // Every add of a sublayer has the skip and the branch as its two inputs.
    REQUIRE(block.last.attn_sum.entry().inputs == std::vector<int>{block.last.attn_skip.index(),
                                                                    block.last.attn_branch.index()});
    REQUIRE(block.last.mlp_sum.entry().inputs == std::vector<int>{block.last.mlp_skip.index(),
                                                                   block.last.mlp_branch.index()});
    const std::string listing = tape.listing();
    REQUIRE(listing.find("blocks.1.mid") != std::string::npos);
    REQUIRE(listing.find("blocks.1.attn.att") != std::string::npos);
  }
}

TEST_CASE("a ReZero block is the identity at init", "[nn][block][rezero]") {
  Initializer init(Init::xavier, 3);
  Block block(test::tiny_config(Placement::rezero), 0, init);
  REQUIRE(block.ln1 == nullptr);
  REQUIRE(block.ln2 == nullptr);
  REQUIRE(block.rezero_attn.value()(0) == 0.0);
  REQUIRE(block.rezero_mlp.value()(0) == 0.0);
  Tape tape;
  TapeScope scope(tape);
  const Array x = test::randn({2, 3, 4}, 4);
  REQUIRE(block.forward(tape.constant(x)).value() == x);
}

TEST_CASE("DeepNorm scales fc1, fc2, v and o (not q, k) by beta and the skip by alpha", "[nn][block][deepnorm]") {
  const ModelConfig c = test::tiny_config(Placement::deepnorm);  // N = 2 layers
  Initializer init_post(Init::xavier, 9), init_deep(Init::xavier, 9);
  Block post(test::tiny_config(Placement::post), 0, init_post);
  Block deep(c, 0, init_deep);
  const double alpha = std::pow(4.0, 0.25), beta = std::pow(16.0, -0.25);
  REQUIRE(deep.alpha == Approx(alpha));
  REQUIRE(deep.beta == Approx(beta));
  REQUIRE(post.alpha == 1.0);
  REQUIRE(xt::allclose(deep.attn.q.weight.value(), post.attn.q.weight.value(), 0.0, 0.0));
  REQUIRE(xt::allclose(deep.attn.k.weight.value(), post.attn.k.weight.value(), 0.0, 0.0));
  REQUIRE(xt::allclose(deep.attn.v.weight.value(), beta * post.attn.v.weight.value(), 1e-15, 0.0));
  REQUIRE(xt::allclose(deep.attn.o.weight.value(), beta * post.attn.o.weight.value(), 1e-15, 0.0));
  REQUIRE(xt::allclose(deep.mlp.fc1.weight.value(), beta * post.mlp.fc1.weight.value(), 1e-15, 0.0));
  REQUIRE(xt::allclose(deep.mlp.fc2.weight.value(), beta * post.mlp.fc2.weight.value(), 1e-15, 0.0));

  Tape tape;
  TapeScope scope(tape);
  Var x = tape.constant(test::randn({2, 3, 4}, 5));
  deep.forward(x);
  REQUIRE(xt::allclose(deep.last.attn_skip.value(), alpha * x.value()));
  REQUIRE(deep.last.attn_skip.entry().label == "blocks.0.attn_skip");
}
