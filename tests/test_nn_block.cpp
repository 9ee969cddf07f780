// The residual block of every zoo member: gradient checks, the stream labels, each member's formula
// (B2T, mixln's layouts, LayerNorm Scaling, Admin's skip), ReZero's identity at init, DeepNorm's alpha
// and beta.
#include <cmath>

#include "check.hpp"
#include "engine/engine.hpp"
#include "nn/block.hpp"
#include "nn/layernorm.hpp"
#include "nn/transformer_lm.hpp"
#include "nn_gradcheck.hpp"

namespace test_nn_block {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;

TEST_CASE("a block of every zoo member passes gradient checks w.r.t. its input and parameters", "[nn][block]") {
  for (const std::string& member : test::zoo()) {
    for (bool fused : {true, false}) {
      INFO(member << (fused ? " fused" : " composite"));
      const ModelConfig c = test::gradcheck_config(member);
      for (std::size_t index : {std::size_t{0}, std::size_t{1}}) {  // mixln: block 0 is post, block 1 pre
        Initializer init(Init::xavier, 1);
        Block block(c, index, init);
        block.set_fused_norms(fused);
        test::jitter(block.named_parameters(), 0.2, 7);  // ReZero's a != 0, norm weights != 1
        REQUIRE_PARAM_GRADCHECK(block.named_parameters(), {test::randn({2, 3, 4}, 2)},
                                [&](const std::vector<Var>& v) { return block.forward(v[0]); });
      }
    }
  }
}

TEST_CASE("a block labels its residual stream on the tape and marks its adds", "[nn][block]") {
  for (const std::string& member : test::zoo()) {
    INFO(member);
    Initializer init(Init::xavier, 1);
    Block block(test::gradcheck_config(member), 1, init);
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
    // Every add of a sublayer has the skip and the branch as its two inputs, marked as such.
    for (const auto& [sum, skip, branch] : {std::tuple{block.last.attn_sum, block.last.attn_skip, block.last.attn_branch},
                                            std::tuple{block.last.mlp_sum, block.last.mlp_skip, block.last.mlp_branch}}) {
      REQUIRE(sum.entry().inputs == std::vector<int>{skip.index(), branch.index()});
      REQUIRE(tape.tag(sum.index(), 0) == skip_edge);
      REQUIRE(tape.tag(sum.index(), 1) == branch_out_edge);
    }
    const std::string listing = tape.listing();
    REQUIRE(listing.find("blocks.1.mid") != std::string::npos);
    REQUIRE(listing.find("blocks.1.attn.att") != std::string::npos);
  }
}

TEST_CASE("B2T: y = N2(h + MLP(h) + x), the connection from the bottom marked as a skip", "[nn][block][b2t]") {
  Initializer init(Init::xavier, 4);
  Block block(test::gradcheck_config("b2t"), 0, init);
  test::jitter(block.named_parameters(), 0.2, 5);
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.leaf(test::randn({2, 3, 4}, 6));
  const Array y = block.forward(x).value();
  // The formula from the block's own modules, computed again apart from the block's code.
  Var h = block.ln1->forward(x + block.attn.forward(x));
  const Array expected = block.ln2->forward(h + block.mlp.forward(h) + x).value();
  REQUIRE(xt::allclose(y, expected, test::tol(1e-13, 1e-4), test::tol(1e-14, 1e-5)));
  REQUIRE((block.last.mid.value() == h.value()));
  // The MLP's skip is h + x, both edges skips; B2T has no final norm.
  const Entry& skip = block.last.mlp_skip.entry();
  REQUIRE(skip.inputs == std::vector<int>{block.last.mid.index(), x.index()});
  REQUIRE(tape.tag(block.last.mlp_skip.index(), 0) == skip_edge);
  REQUIRE(tape.tag(block.last.mlp_skip.index(), 1) == skip_edge);
  REQUIRE(block.last.mlp_skip.entry().label == "blocks.0.mlp_skip");
  REQUIRE_FALSE(TransformerLM(test::gradcheck_config("b2t")).has_final_norm());
}

TEST_CASE("mixln: blocks 0..K-1 are Post-LN blocks, K..L-1 Pre-LN blocks, K = L/4 rounded half up",
          "[nn][block][mixln]") {
  ModelConfig c = test::gradcheck_config("mixln");
  for (const auto& [L, K] : {std::pair{6, 2}, std::pair{10, 3}, std::pair{2, 1}, std::pair{1, 0}, std::pair{4, 1}}) {
    c.layers = static_cast<std::size_t>(L);
    REQUIRE(c.mixln_post_blocks() == static_cast<std::size_t>(K));
  }
  c.layers = 6;
  c.mixln_post = 4;
  TransformerLM model(c);
  for (const auto& block : model.blocks)
    REQUIRE(block->placement == (block->index < 4 ? Placement::post : Placement::pre));
  REQUIRE(model.has_final_norm());
  c.mixln_post = 7;
  REQUIRE_THROWS_WITH(TransformerLM(c), Catch::Contains("mixln_post 7 is more than the 6 layers"));

  // K = 0 is Pre-LN and K = L is Post-LN with a final norm: the same draws, the same numbers.
  const IndexArray ids = {{0, 3, 4}, {2, 2, 1}};
  auto logits = [&](ModelConfig m) {
    TransformerLM model(m);
    Tape tape;
    TapeScope scope(tape);
    return Array(model.logits(ids).value());
  };
  ModelConfig mix = test::gradcheck_config("mixln");
  mix.mixln_post = 0;
  REQUIRE((logits(mix) == logits(test::gradcheck_config("pre"))));
  mix.mixln_post = 2;
  TransformerLM all_post(mix), post(test::gradcheck_config("post"));
  Tape tape;
  TapeScope scope(tape);
  all_post.logits(ids);
  post.logits(ids);
  REQUIRE((all_post.blocks[1]->last.out.value() == post.blocks[1]->last.out.value()));
}

TEST_CASE("LayerNorm Scaling multiplies every norm's output in block l by 1/sqrt(l)", "[nn][block][lns]") {
  for (const std::string member : {"pre/layer/lns", "peri/rms/lns"}) {
    INFO(member);
    for (std::size_t index : {std::size_t{0}, std::size_t{3}}) {
      Initializer init(Init::xavier, 2);
      Block block(test::gradcheck_config(member), index, init);
      test::jitter(block.named_parameters(), 0.2, 3);
      const double s = 1.0 / std::sqrt(static_cast<double>(index + 1));
      REQUIRE(block.lns_scale == s);
      Tape tape;
      TapeScope scope(tape);
      Var x = tape.leaf(test::randn({2, 3, 4}, 4));
      block.forward(x);
      REQUIRE(xt::allclose(block.last.attn_in.value(), s * block.ln1->forward(x).value(), 1e-15, 0.0));
      REQUIRE(xt::allclose(block.last.mlp_in.value(), s * block.ln2->forward(block.last.mid).value(), 1e-15, 0.0));
      if (block.ln_attn_out) {
        Var a = block.attn.forward(block.last.attn_in);
        REQUIRE(xt::allclose(block.last.attn_branch.value(), s * block.ln_attn_out->forward(a).value(), 1e-15, 0.0));
      }
    }
  }
}

TEST_CASE("Admin multiplies each skip elementwise by its omega, a parameter [d] per sublayer", "[nn][block][admin]") {
  Initializer init(Init::xavier, 3);
  Block block(test::gradcheck_config("post/layer/admin"), 0, init);
  REQUIRE(block.admin_attn.shape() == Shape{4});
  REQUIRE(block.admin_mlp.shape() == Shape{4});
  block.admin_attn.value() = Array{0.5, 1.5, 2.0, -1.0};
  block.admin_mlp.value() = Array{1.0, 3.0, 0.25, 2.0};
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.leaf(test::randn({2, 3, 4}, 8));
  block.forward(x);
  REQUIRE((block.last.attn_skip.value() == Array(x.value() * block.admin_attn.value())));
  REQUIRE((block.last.mlp_skip.value() == Array(block.last.mid.value() * block.admin_mlp.value())));
  REQUIRE(block.last.attn_skip.entry().label == "blocks.0.attn_skip");
  REQUIRE(tape.tag(block.last.attn_skip.index(), 0) == skip_edge);  // x -> omega (.) x: the skip path
  REQUIRE(tape.tag(block.last.attn_skip.index(), 1) == EdgeTag{});  // omega, a parameter
}

TEST_CASE("a ReZero block is the identity at init", "[nn][block][rezero]") {
  for (const std::string member : {"rezero", "pre/layer/rezero", "peri/dyt/rezero"}) {
    INFO(member);
    Initializer init(Init::xavier, 3);
    Block block(test::gradcheck_config(member), 0, init);
    REQUIRE(block.rezero_attn.value()(0) == 0.0);
    REQUIRE(block.rezero_mlp.value()(0) == 0.0);
    Tape tape;
    TapeScope scope(tape);
    const Array x = test::randn({2, 3, 4}, 4);
    REQUIRE((block.forward(tape.constant(x)).value() == x));
  }
  Initializer init(Init::xavier, 3);
  Block block(test::gradcheck_config("rezero"), 0, init);
  REQUIRE(block.ln1 == nullptr);
  REQUIRE(block.ln2 == nullptr);
}

TEST_CASE("DeepNorm scales fc1, fc2, v and o (not q, k) by beta and the skip by alpha", "[nn][block][deepnorm]") {
  const ModelConfig c = test::gradcheck_config("deepnorm");  // N = 2 layers
  Initializer init_post(Init::xavier, 9), init_deep(Init::xavier, 9);
  Block post(test::gradcheck_config("post"), 0, init_post);
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

}  // namespace test_nn_block
