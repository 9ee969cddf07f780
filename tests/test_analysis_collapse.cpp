// The measures of representation collapse (analysis/collapse.hpp) against values computed by hand on
// small arrays, and on a model whose attention or FFN units are forced into a known state.
#include <cmath>
#include <string>
#include <vector>

#include "check.hpp"
#include "nn_gradcheck.hpp"
#include "tiny_model.hpp"
#include "engine/engine.hpp"
#include "analysis/collapse.hpp"
#include "analysis/stream_split.hpp"
#include "nn/linear.hpp"

namespace test_analysis_collapse {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::analysis;

namespace {

// One sequence (B = 1) of the given rows: (1, T, C).
Array sequence(const std::vector<std::vector<double>>& rows) {
  Array x = xt::zeros<Real>({std::size_t{1}, rows.size(), rows[0].size()});
  for (std::size_t t = 0; t < rows.size(); ++t)
    for (std::size_t c = 0; c < rows[t].size(); ++c) x(0, t, c) = rows[t][c];
  return x;
}

}  // namespace

TEST_CASE("position_cosine: 1 for one direction everywhere, 0 for orthogonal, -1 for opposite", "[collapse]") {
  REQUIRE(position_cosine(sequence({{1, 2}, {2, 4}, {0.5, 1}})) == Approx(1.0).epsilon(1e-14));
  REQUIRE(std::abs(position_cosine(sequence({{1, 0}, {0, 3}}))) < 1e-15);
  REQUIRE(position_cosine(sequence({{1, 1}, {-2, -2}})) == Approx(-1.0).epsilon(1e-14));
  // Three rows: cos(r0, r1) = 0, cos(r0, r2) = cos(r1, r2) = 1/sqrt(2); the six ordered pairs sum to
  // 2 (0 + 1/sqrt(2) + 1/sqrt(2)) = 4/sqrt(2).
  REQUIRE(position_cosine(sequence({{1, 0}, {0, 1}, {1, 1}})) == Approx(4.0 / std::sqrt(2.0) / 6.0).epsilon(test::tol(1e-14, 1e-5)));
  // Two sequences are measured apart and averaged: 1 and 0 give 0.5.
  Array two = xt::zeros<Real>({2, 2, 2});
  two(0, 0, 0) = 1, two(0, 1, 0) = 3, two(1, 0, 0) = 1, two(1, 1, 1) = 1;
  REQUIRE(position_cosine(two) == Approx(0.5).epsilon(1e-14));
}

TEST_CASE("top_direction_share: sigma_1^2 over the sum of sigma_i^2 of each sequence", "[collapse]") {
  REQUIRE(top_direction_share(sequence({{1, 2, 0}, {-3, -6, 0}})) == Approx(1.0).epsilon(1e-12));  // rank one
  // Orthogonal rows of lengths 3 and 4: singular values 4 and 3, share 16 / 25.
  REQUIRE(top_direction_share(sequence({{3, 0}, {0, 4}})) == Approx(16.0 / 25.0).epsilon(1e-12));
  // Rows (1, 0) and (1, 1): x^T x = [[2, 1], [1, 1]], eigenvalues (3 +- sqrt(5)) / 2 over a trace of 3.
  REQUIRE(top_direction_share(sequence({{1, 0}, {1, 1}})) == Approx((3 + std::sqrt(5.0)) / 6.0).epsilon(test::tol(1e-12, 1e-5)));
}

TEST_CASE("shared_share: T |mean|^2 over the energy; 1 for equal rows, 0 for rows that cancel", "[collapse]") {
  REQUIRE(shared_share(sequence({{1, -2}, {1, -2}, {1, -2}})) == Approx(1.0).epsilon(1e-14));
  REQUIRE(std::abs(shared_share(sequence({{1, 2}, {-1, -2}}))) < 1e-15);
  // (1, 0) and (0, 1): mean (0.5, 0.5), T |m|^2 = 1, energy 2.
  REQUIRE(shared_share(sequence({{1, 0}, {0, 1}})) == Approx(0.5).epsilon(1e-14));
  // (2, 0) and (0, 0): mean (1, 0), T |m|^2 = 2, energy 4.
  REQUIRE(shared_share(sequence({{2, 0}, {0, 0}})) == Approx(0.5).epsilon(1e-14));
}

TEST_CASE("dead_unit_fraction: the units that are <= 0 at every position", "[collapse]") {
  // Units: 0 negative everywhere (dead), 1 positive at one position (alive), 2 exactly 0 everywhere (dead).
  const Array z = sequence({{-1, -2, 0}, {-0.5, 0.25, 0}, {-3, -1, 0}});
  REQUIRE(dead_unit_fraction(z) == Approx(2.0 / 3.0).epsilon(1e-15));
}

TEST_CASE("the collapse measures refuse a shape that is not (B, T, C), naming the measure and the caller",
          "[collapse]") {
  using Catch::Contains;
  using Catch::StartsWith;
  REQUIRE_THROWS_WITH(position_cosine(sequence({{1, 2}})),
                      StartsWith("position_cosine at test_analysis_collapse.cpp:") && Contains("T >= 2") && Contains("(1, 1, 2)"));
  REQUIRE_THROWS_WITH(shared_share(Array{1.0, 2.0}), StartsWith("shared_share at test_analysis_collapse.cpp:") && Contains("(2,)"));
}

TEST_CASE("attention_entropy_share: 1 for uniform attention (zero queries and keys), below 1 when learned",
          "[collapse]") {
  nn::TransformerLM model = test::tiny_model("post");
  const std::vector<double> learned = [&] {
    Tape tape;
    TapeScope scope(tape);
    model.logits(test::tiny_ids(2, 6));
    return attention_entropy_share(model);
  }();
  test::make_attention_uniform(model);  // every score 0: position t attends uniformly to its t + 1 keys
  Tape tape;
  TapeScope scope(tape);
  model.logits(test::tiny_ids(2, 6));
  const std::vector<double> uniform = attention_entropy_share(model);
  REQUIRE(uniform.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    REQUIRE(uniform[i] == Approx(1.0).epsilon(test::tol(1e-12, 1e-5)));
    REQUIRE(learned[i] < 1.0);
    REQUIRE(learned[i] > 0.0);
  }
}

TEST_CASE("block_collapse: dead units from fc1's pre-activation, branch/skip ratios from the trace", "[collapse]") {
  for (const std::string placement : {"post", "pre"}) {
    CAPTURE(placement);
    nn::TransformerLM model = test::tiny_model(placement);
    model.blocks[0]->mlp.fc1.bias.value().fill(-1e3);  // every unit of block 0 is negative everywhere
    model.blocks[1]->mlp.fc1.bias.value().fill(1e3);   // every unit of block 1 fires everywhere
    Tape tape;
    TapeScope scope(tape);
    model.logits(test::tiny_ids(2, 6));
    const std::vector<BlockCollapse> c = block_collapse(model);
    REQUIRE(c.size() == 2);
    REQUIRE(c[0].dead_units == 1.0);
    REQUIRE(c[1].dead_units == 0.0);
    // Block 1's fc1 of bias 1e3 makes GELU the identity plus 1e3: the MLP branch is the same large vector
    // at every position (fc2 of a nearly constant input), so nearly all of its energy is shared.
    REQUIRE(c[1].mlp_shared_share > 0.999);
    REQUIRE(c[1].mlp_branch_to_skip > 10.0);  // the branch of an fc1 shifted by 1e3 dwarfs its skip
    for (std::size_t i = 0; i < 2; ++i) {
      const nn::BlockTrace& t = model.blocks[i]->last;
      REQUIRE(c[i].attn_branch_to_skip == Approx(rms(t.attn_branch.value()) / rms(t.attn_skip.value())).epsilon(1e-15));
      REQUIRE(c[i].out_cosine == Approx(position_cosine(t.out.value())).epsilon(1e-15));
      REQUIRE(c[i].out_top_share >= 1.0 / 6.0 - 1e-12);  // the top of T = 6 directions holds at least 1/T
      REQUIRE(c[i].out_top_share <= 1.0 + 1e-12);
    }
  }
}

TEST_CASE("predictions: the head's entropy and its KL from the unigram distribution, by hand", "[collapse]") {
  // One position with equal logits over V = 2: p = (1/2, 1/2), H = log 2; against u = (1/4, 3/4),
  // KL(u || p) = 1/4 log(1/2) + 3/4 log(3/2). A second position of logits (0, log 3): p = (1/4, 3/4) = u,
  // KL 0, H = -(1/4 log 1/4 + 3/4 log 3/4). The means are over the two positions.
  Array z = xt::zeros<Real>({1, 2, 2});
  z(0, 1, 1) = std::log(3.0);
  const std::vector<double> u = {0.25, 0.75};
  const Predictions p = predictions(z, u);
  const double h1 = std::log(2.0), h2 = -(0.25 * std::log(0.25) + 0.75 * std::log(0.75));
  REQUIRE(p.entropy == Approx((h1 + h2) / 2).epsilon(test::tol(1e-14, 1e-5)));
  REQUIRE(p.kl_to_unigram == Approx((0.25 * std::log(0.5) + 0.75 * std::log(1.5)) / 2).epsilon(1e-14));
  // a symbol the unigram lacks (u_v = 0) adds nothing: u = (0, 1) against p = (1/2, 1/2) is log 2
  Array equal = xt::zeros<Real>({1, 1, 2});
  REQUIRE(predictions(equal, {0.0, 1.0}).kl_to_unigram == Approx(std::log(2.0)).epsilon(1e-14));
  // A shift of every logit at a position changes nothing (softmax is shift-invariant), even a large one.
  Array shifted = z + 1e3;
  REQUIRE(predictions(shifted, u).entropy == Approx(p.entropy).epsilon(test::tol(1e-12, 1e-5)));
  REQUIRE_THROWS_WITH(predictions(z, {0.5, 0.25, 0.25}),
                      Catch::Contains("predictions") && Catch::Contains("2 symbols, the unigram distribution 3") &&
                          Catch::Contains("test_analysis_collapse.cpp"));
}

TEST_CASE("collapse_on: one no-grad forward, measured as block_collapse and predictions measure it", "[collapse]") {
  nn::TransformerLM model = test::tiny_model("post");
  const IndexArray ids = test::tiny_ids(2, 6);
  const std::vector<double> u(model.config.vocab, 1.0 / static_cast<double>(model.config.vocab));
  const Collapse c = collapse_on(model, ids, u);
  REQUIRE(Tape::current().size() == 0);  // collapse_on left the tape empty
  const Array logits = model.logits(ids).value();  // the same forward, with gradient recording
  const std::vector<BlockCollapse> expected = block_collapse(model);
  REQUIRE(c.blocks.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    REQUIRE(c.blocks[i].out_cosine == expected[i].out_cosine);
    REQUIRE(c.blocks[i].dead_units == expected[i].dead_units);
    REQUIRE(c.blocks[i].entropy_share == expected[i].entropy_share);
  }
  REQUIRE(c.head.entropy == predictions(logits, u).entropy);
  // against the uniform u, KL(u || p_t) = -log V - mean_v log p_t,v, averaged over the positions
  double expected_kl = 0.0;
  const std::size_t B = logits.shape(0), T = logits.shape(1), V = logits.shape(2);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      double z = 0.0;
      for (std::size_t v = 0; v < V; ++v) z += std::exp(logits(b, t, v));
      expected_kl -= std::log(static_cast<double>(V));
      for (std::size_t v = 0; v < V; ++v) expected_kl -= (logits(b, t, v) - std::log(z)) / static_cast<double>(V);
    }
  REQUIRE(c.head.kl_to_unigram == Approx(expected_kl / static_cast<double>(B * T)).epsilon(test::tol(1e-12, 1e-5)));
  Tape::current().reset();
}

TEST_CASE("a linear map whose input is one vector at every position: its weight gradient is rank one, x (sum_t g_t)^T",
          "[collapse]") {
  // y_t = x_t W + b; dL/dW = sum_t x_t^T g_t with g_t = dL/dy_t. With x_t = x at every t this is
  // x^T (sum_t g_t): only the positions' summed gradient reaches W, and the update -lr dL/dW changes
  // every position's output by the same -lr |x|^2 sum_t g_t. What the positions' gradients say apart
  // from their sum (the token each should predict) cannot reach W: the docs' persistence argument.
  nn::Initializer init(nn::Init::xavier, 1);
  nn::Linear lin(3, 4, init);
  const std::vector<double> x = {0.5, -1.0, 2.0};
  Array input = xt::zeros<Real>({1, 5, 3});
  for (std::size_t t = 0; t < 5; ++t)
    for (std::size_t c = 0; c < 3; ++c) input(0, t, c) = x[c];
  const Array g = test::randn({1, 5, 4}, 9);  // a different upstream gradient at every position
  Tape tape;
  TapeScope scope(tape);
  lin.forward(tape.constant(input)).backward(g);
  for (std::size_t c = 0; c < 3; ++c)
    for (std::size_t j = 0; j < 4; ++j) {
      double summed = 0.0;
      for (std::size_t t = 0; t < 5; ++t) summed += g(0, t, j);
      REQUIRE(lin.weight.grad()(c, j) == Approx(x[c] * summed).epsilon(test::tol(1e-12, 1e-5)));
    }
  // a rank-one matrix: every row is a multiple of the first (x_c / x_0 times it)
  for (std::size_t c = 1; c < 3; ++c)
    for (std::size_t j = 0; j < 4; ++j)
      REQUIRE(lin.weight.grad()(c, j) == Approx(lin.weight.grad()(0, j) * x[c] / x[0]).epsilon(1e-12));
}

TEST_CASE("block_collapse on every zoo member: one entry per block, NaN only where a measure is undefined",
          "[collapse][zoo]") {
  for (const std::string& member : test::zoo()) {
    for (const std::size_t T : {std::size_t{3}, std::size_t{1}}) {
      CAPTURE(member, T);
      nn::TransformerLM model(test::gradcheck_config(member));  // 2 blocks, d 4, vocab 5, context 3
      IndexArray ids = xt::zeros<std::int64_t>({std::size_t{2}, T});
      for (std::size_t i = 0; i < ids.size(); ++i) ids.flat(i) = static_cast<std::int64_t>((2 * i + 1) % 5);
      Tape tape;
      TapeScope scope(tape);
      model.logits(ids);
      const std::vector<BlockCollapse> c = block_collapse(model);
      REQUIRE(c.size() == 2);
      const bool rezero = model.blocks[0]->residual == nn::Residual::rezero;
      for (std::size_t i = 0; i < 2; ++i) {
        CAPTURE(i);
        if (T == 1) {  // a single position: no pair to compare, no choice of key
          REQUIRE(std::isnan(c[i].out_cosine));
          REQUIRE(std::isnan(c[i].entropy_share));
          REQUIRE(c[i].out_top_share == Approx(1.0).epsilon(1e-12));  // one row is rank one
        } else {
          REQUIRE(c[i].out_cosine >= -1.0 - 1e-12);
          REQUIRE(c[i].out_cosine <= 1.0 + 1e-12);
          REQUIRE(c[i].entropy_share > 0.0);
          REQUIRE(c[i].entropy_share <= 1.0 + 1e-12);
          REQUIRE(c[i].out_top_share >= 1.0 / 3.0 - 1e-12);
          REQUIRE(c[i].out_top_share <= 1.0 + 1e-12);
        }
        if (rezero) {  // a = 0 at init: both branches are exactly 0
          REQUIRE(std::isnan(c[i].attn_shared_share));
          REQUIRE(std::isnan(c[i].mlp_shared_share));
          REQUIRE(c[i].attn_branch_to_skip == 0.0);
          REQUIRE(c[i].mlp_branch_to_skip == 0.0);
        } else {
          for (double share : {c[i].attn_shared_share, c[i].mlp_shared_share}) {
            REQUIRE(share >= 0.0);
            REQUIRE(share <= 1.0 + test::tol(1e-12, 1e-6));
          }
          REQUIRE(c[i].attn_branch_to_skip > 0.0);
          REQUIRE(std::isfinite(c[i].mlp_branch_to_skip));
        }
        REQUIRE(c[i].dead_units >= 0.0);
        REQUIRE(c[i].dead_units <= 1.0);
      }
      // Without the top share the rest is the same.
      const std::vector<BlockCollapse> cheap = block_collapse(model, false);
      for (std::size_t i = 0; i < 2; ++i) {
        REQUIRE(std::isnan(cheap[i].out_top_share));
        REQUIRE(cheap[i].dead_units == c[i].dead_units);
        REQUIRE((cheap[i].out_cosine == c[i].out_cosine || std::isnan(c[i].out_cosine)));
      }
    }
  }
}

}  // namespace test_analysis_collapse

