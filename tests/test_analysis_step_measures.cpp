// The per-step measures of dynamics (analysis/step_measures.hpp): the update ratio of each
// parameter group and the entropy of each attention head, against values computed here by hand.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "check.hpp"
#include "tiny_model.hpp"
#include "engine/engine.hpp"
#include "analysis/collapse.hpp"
#include "analysis/step_measures.hpp"
#include "nn/optim.hpp"

namespace test_analysis_step_measures {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::analysis;


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
  nn::TransformerLM model = test::tiny_model("pre");
  const std::vector<Array> before = parameter_values(model);
  // Move only block 1's MLP: fc1.weight by +0.5 in every entry.
  double w_sq = 0.0, step_sq = 0.0;
  for (nn::NamedParameter p : model.named_parameters())  // a copy of the handle: the value is shared
    if (p.name.rfind("blocks.1.mlp.", 0) == 0) {
      w_sq += std::pow(gs::norm(p.parameter.value()), 2);
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
      REQUIRE(r[g] == Approx(std::sqrt(step_sq / w_sq)).epsilon(test::tol(1e-12, 1e-5)));
    else
      REQUIRE(r[g] == 0.0);
  }
}

TEST_CASE("attention_entropy: uniform attention gives the mean over t of log(t + 1); learned attention less",
          "[step_measures]") {
  nn::TransformerLM model = test::tiny_model("post");
  const std::size_t B = 2, T = 6;
  const std::vector<double> learned = [&] {
    Tape tape;
    TapeScope scope(tape);
    model.logits(test::tiny_ids(B, T));
    return attention_entropy(model);
  }();
  test::make_attention_uniform(model);  // every score 0: position t attends uniformly to its t + 1 keys
  Tape tape;
  TapeScope scope(tape);
  model.logits(test::tiny_ids(B, T));
  const std::vector<double> uniform = attention_entropy(model);
  double expected = 0.0;
  for (std::size_t t = 0; t < T; ++t) expected += std::log(static_cast<double>(t + 1)) / static_cast<double>(T);
  REQUIRE(uniform.size() == 4);  // 2 blocks x 2 heads
  REQUIRE(learned.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    REQUIRE(uniform[i] == Approx(expected).epsilon(test::tol(1e-12, 1e-5)));
    REQUIRE(learned[i] < expected);  // uniform is the largest entropy a causal row can have
    REQUIRE(learned[i] > 0.0);
  }
}

// ---- the early window: spectral update ratio, linear prediction of the loss change, token share ----

namespace {

// A (m, n) with singular values s (m <= n) by construction: A = Q1 diag(s) Q2^T, Q1 and Q2 products of
// Givens rotations (orthogonal), so the singular values are known without an SVD.
Array with_singular_values(const std::vector<double>& s, std::size_t n) {
  const std::size_t m = s.size();
  Array a = xt::zeros<Real>({m, n});
  for (std::size_t i = 0; i < m; ++i) a(i, i) = s[i];
  auto rotate_rows = [](Array& x, std::size_t i, std::size_t j, double t) {  // x <- G x
    for (std::size_t c = 0; c < x.shape(1); ++c) {
      const double xi = x(i, c), xj = x(j, c);
      x(i, c) = std::cos(t) * xi - std::sin(t) * xj, x(j, c) = std::sin(t) * xi + std::cos(t) * xj;
    }
  };
  auto rotate_cols = [](Array& x, std::size_t i, std::size_t j, double t) {  // x <- x G^T
    for (std::size_t r = 0; r < x.shape(0); ++r) {
      const double xi = x(r, i), xj = x(r, j);
      x(r, i) = std::cos(t) * xi - std::sin(t) * xj, x(r, j) = std::sin(t) * xi + std::cos(t) * xj;
    }
  };
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = i + 1; j < m; ++j) rotate_rows(a, i, j, 0.3 + 0.7 * static_cast<double>(i + 2 * j));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) rotate_cols(a, i, j, 1.1 + 0.4 * static_cast<double>(3 * i + j));
  return a;
}

Array gaussian(const std::vector<std::size_t>& shape, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Array x = Array::from_shape(shape);
  for (Real& v : x) v = normal(rng);
  return x;
}

nn::Batch batch_of(std::size_t B, std::size_t T) {
  nn::Batch b{test::tiny_ids(B, T), test::tiny_ids(B, T)};
  for (std::size_t i = 0; i < b.targets.size(); ++i) b.targets.flat(i) = static_cast<std::int64_t>((5 * i + 2) % 8);
  return b;
}

}  // namespace

TEST_CASE("spectral_norm: the largest singular value of a matrix built with known singular values",
          "[step_measures]") {
  const Array a = with_singular_values({0.5, 3.0, 1.0, 2.0}, 6);  // (4, 6)
  REQUIRE(gs::norm(a) == Approx(std::sqrt(0.25 + 9.0 + 1.0 + 4.0)).epsilon(test::tol(1e-12, 1e-5)));  // the rotations are orthogonal
  REQUIRE(spectral_norm(a, 1e-13, 2000) == Approx(3.0).epsilon(test::tol(1e-9, 1e-3)));
  REQUIRE(spectral_norm(Array(xt::transpose(a)), 1e-13, 2000) == Approx(3.0).epsilon(test::tol(1e-9, 1e-3)));
  REQUIRE(spectral_norm(Array(a * -2.0), 1e-13, 2000) == Approx(6.0).epsilon(test::tol(1e-9, 1e-3)));
  // Rank one: u v^T has the single singular value |u| |v|.
  Array uv = Array::from_shape({3, 2});
  const double u[3] = {1.0, -2.0, 2.0}, v[2] = {3.0, 4.0};
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 2; ++j) uv(i, j) = u[i] * v[j];
  REQUIRE(spectral_norm(uv) == Approx(3.0 * 5.0).epsilon(test::tol(1e-12, 1e-5)));
  REQUIRE(spectral_norm(Array(xt::zeros<Real>({3, 3}))) == 0.0);
  // A warm start from another matrix's vector converges to the same value, and leaves this one's vector.
  std::vector<double> start;
  spectral_norm(with_singular_values({1.0, 4.0, 2.0}, 6), start);
  REQUIRE(start.size() == 6);
  REQUIRE(spectral_norm(a, start, 1e-13, 2000) == Approx(3.0).epsilon(test::tol(1e-9, 1e-3)));
}

TEST_CASE("spectral_update_ratios: max over each block's attention and MLP matrices of ||dW||_2 / ||W||_2",
          "[step_measures]") {
  REQUIRE(spectral_group_names(2) == std::vector<std::string>{"b0.attn", "b0.mlp", "b1.attn", "b1.mlp"});
  nn::TransformerLM model = test::tiny_model("pre");
  const std::vector<Array> before = parameter_values(model);
  // Block 1's fc2 moves by a rank-one c u v^T (||.||_2 = c |u| |v|), its fc1 by a tenth of that: the
  // MLP group reports fc2's ratio if that is the larger. Biases and norms (1-D) move too but do not count.
  double expected = 0.0;
  for (nn::NamedParameter p : model.named_parameters()) {
    Array& w = p.parameter.value();
    if (p.name == "blocks.1.mlp.fc2.weight" || p.name == "blocks.1.mlp.fc1.weight") {
      const double c = p.name == "blocks.1.mlp.fc2.weight" ? 0.3 : 0.03, sigma_w = spectral_norm(w, 1e-13, 5000);
      double uu = 0.0, vv = 0.0;
      for (std::size_t i = 0; i < w.shape(0); ++i) uu += 1.0 + i * i;
      for (std::size_t j = 0; j < w.shape(1); ++j) vv += std::pow(1.0 - 0.1 * j, 2);
      for (std::size_t i = 0; i < w.shape(0); ++i)
        for (std::size_t j = 0; j < w.shape(1); ++j) w(i, j) += c * std::sqrt(1.0 + i * i) * (1.0 - 0.1 * j);
      expected = std::max(expected, c * std::sqrt(uu * vv) / sigma_w);
    }
    if (p.name == "blocks.0.mlp.fc1.bias" || p.name == "blocks.0.ln1.weight") w += 1.0;
  }
  const std::vector<double> r = spectral_update_ratios(before, model);
  REQUIRE(r.size() == 4);
  REQUIRE(r[0] == 0.0);
  REQUIRE(r[1] == 0.0);  // fc1.bias is 1-D
  REQUIRE(r[2] == 0.0);
  REQUIRE(r[3] == Approx(expected).epsilon(1e-5));
  REQUIRE(r[3] > 0.01);
  SpectralStarts starts;
  REQUIRE(spectral_update_ratios(before, model, &starts)[3] == Approx(expected).epsilon(1e-5));
  REQUIRE(spectral_update_ratios(before, model, &starts)[3] == Approx(expected).epsilon(1e-5));  // warm
  REQUIRE(starts.size() == 2 * 6);  // every 2-D matrix of the blocks: q, k, v, o, fc1, fc2 per block
}

TEST_CASE("spectral_update_ratios warm-started from step to step, as dynamics calls it, against cold starts",
          "[step_measures]") {
  nn::TransformerLM model = test::tiny_model("post");
  const nn::Batch batch = batch_of(2, 6);
  const std::unique_ptr<nn::Optimizer> adam = nn::make_optimizer("adam", model.named_parameters(), 0.0, 0.9, 0.98, 1e-8);
  SpectralStarts starts;
  for (int step = 0; step < 8; ++step) {
    Tape::current().reset();
    model.zero_grad();
    model.loss(batch.inputs, batch.targets).backward();
    const std::vector<Array> before = parameter_values(model);
    adam->step(1e-2);
    const std::vector<double> warm = spectral_update_ratios(before, model, &starts);
    // Cold, to a far tighter tolerance: the max over each group's matrices, by hand.
    std::vector<double> cold(4, 0.0);
    std::size_t i = 0;
    for (const nn::NamedParameter& p : model.named_parameters()) {
      const std::string& n = p.name;
      if (n.rfind("blocks.", 0) == 0 && before[i].dimension() == 2) {
        const std::size_t g = 2 * std::stoul(n.substr(7)) + (n.find(".mlp.") != std::string::npos ? 1 : 0);
        const double dw = spectral_norm(Array(p.parameter.value() - before[i]), 1e-14, 20000);
        cold[g] = std::max(cold[g], dw / spectral_norm(before[i], 1e-14, 20000));
      }
      ++i;
    }
    for (std::size_t g = 0; g < 4; ++g) {
      INFO("step " << step << " group " << g);
      REQUIRE(cold[g] > 0.0);
      REQUIRE(warm[g] == Approx(cold[g]).epsilon(1e-5));  // tol 1e-6 per iteration: about 1e-6 off
    }
  }
}

TEST_CASE("linear_change: g . d against a central finite difference of the loss along d", "[step_measures]") {
  nn::TransformerLM model = test::tiny_model("post");
  const nn::Batch batch = batch_of(2, 6);
  const double l0 = loss_now(model, batch);
  Tape::current().reset();
  model.zero_grad();
  model.loss(batch.inputs, batch.targets).backward();
  REQUIRE(last_loss(model) == Approx(l0).epsilon(1e-12));
  const std::vector<Array> grads = parameter_grads(model), before = parameter_values(model);
  std::vector<Array> direction;
  for (std::size_t i = 0; i < before.size(); ++i) direction.push_back(gaussian(shape_of(before[i]), 11 + i));
  auto move_to = [&](double eps) {  // W = W_before + eps * direction
    std::size_t i = 0;
    for (nn::NamedParameter p : model.named_parameters()) p.parameter.value() = before[i] + eps * direction[i], ++i;
  };
  const double eps = test::tol(1e-5, 3e-3);  // float32: larger, so that the change is above the loss's rounding
  move_to(-eps);
  const double l_minus = loss_now(model, batch);
  move_to(eps);
  const double l_plus = loss_now(model, batch), predicted = linear_change(grads, before, model);
  // (L(W + eps d) - L(W - eps d)) / 2 = eps g . d + O(eps^3)
  REQUIRE(predicted == Approx((l_plus - l_minus) / 2).epsilon(test::tol(1e-6, 1e-2)));
  REQUIRE(std::abs(predicted) > 1e-7);
  // The one-sided change, O(eps) off (float32's larger eps puts it too far off to test).
  if (!float32_build) REQUIRE((l_plus - l0) / predicted == Approx(1.0).epsilon(1e-3));
  // A large step leaves the linear region: the ratio is far from 1.
  move_to(3.0);
  REQUIRE(std::abs((loss_now(model, batch) - l0) / linear_change(grads, before, model) - 1.0) > 0.1);
}

TEST_CASE("last_loss: the loss TransformerLM::loss returns, z-loss term included", "[step_measures]") {
  nn::TransformerLM model = test::tiny_model("pre");
  model.z_loss = 0.3;
  const nn::Batch batch = batch_of(2, 6);
  Tape tape;
  TapeScope scope(tape);
  const double full = model.loss(batch.inputs, batch.targets).value()();
  REQUIRE(last_loss(model) == Approx(full).epsilon(test::tol(1e-12, 1e-5)));
  REQUIRE(std::abs(full - model.last.ce.value()()) > 1e-3);  // the z term is there
  REQUIRE(loss_now(model, batch) == Approx(full).epsilon(test::tol(1e-12, 1e-5)));
}

TEST_CASE("head_input: what the head reads, ln_f's output in pre, the last block's output in post",
          "[step_measures]") {
  for (const std::string placement : {"pre", "post"}) {
    INFO(placement);
    nn::TransformerLM model = test::tiny_model(placement);
    Tape tape;
    TapeScope scope(tape);
    const Array logits = model.logits(test::tiny_ids(2, 6)).value();
    const Array& h = head_input(model);  // (2, 6, 8)
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t t = 0; t < 6; ++t)
        for (std::size_t v = 0; v < 8; ++v) {
          double z = model.head.bias.value()(v);
          for (std::size_t c = 0; c < 8; ++c) z += h(b, t, c) * model.head.weight.value()(c, v);
          REQUIRE(logits(b, t, v) == Approx(z).margin(1e-12));
        }
  }
}

TEST_CASE("token_share: 1 for a function of the token, about (K - 1)/(N - 1) for noise, the variance split between",
          "[step_measures]") {
  const std::size_t B = 8, T = 50, C = 4, K = 8;  // N = 400 positions, tokens 0..7
  IndexArray tokens = IndexArray::from_shape({B, T});
  for (std::size_t i = 0; i < B * T; ++i) tokens.flat(i) = static_cast<std::int64_t>((i * 7 + i / 9) % K);
  const Array table = gaussian({K, C}, 1), noise = gaussian({B, T, C}, 2);
  Array of_token = Array::from_shape({B, T, C});
  for (std::size_t i = 0; i < B * T; ++i)
    for (std::size_t c = 0; c < C; ++c) of_token.flat(i * C + c) = table(tokens.flat(i), c);
  REQUIRE(token_share(of_token, tokens) == Approx(1.0).epsilon(1e-12));
  const double chance = static_cast<double>(K - 1) / static_cast<double>(B * T - 1);
  const double independent = token_share(noise, tokens);
  REQUIRE(independent > 0.0);
  REQUIRE(independent < 3 * chance);
  // h = f(token) + noise: between / total over the sample, computed here directly from the two parts.
  const Array mixed = of_token + noise;
  const double share = token_share(mixed, tokens);
  REQUIRE(share > 0.2);
  REQUIRE(share < 0.9);
  double total = 0.0, within = 0.0;
  for (std::size_t c = 0; c < C; ++c) {
    std::vector<double> sum(K, 0.0), count(K, 0.0);
    double all = 0.0;
    for (std::size_t i = 0; i < B * T; ++i) sum[tokens.flat(i)] += mixed.flat(i * C + c), count[tokens.flat(i)] += 1, all += mixed.flat(i * C + c);
    for (std::size_t i = 0; i < B * T; ++i) {
      total += std::pow(mixed.flat(i * C + c) - all / (B * T), 2);
      within += std::pow(mixed.flat(i * C + c) - sum[tokens.flat(i)] / count[tokens.flat(i)], 2);
    }
  }
  REQUIRE(share == Approx(1.0 - within / total).epsilon(1e-12));  // between = total - within
  REQUIRE(std::isnan(token_share(Array(xt::ones<Real>({B, T, C})), tokens)));
}

TEST_CASE("probe_pass: probe_logits' logits and the token share of the head input", "[step_measures]") {
  nn::TransformerLM model = test::tiny_model("post");
  const nn::Batch probe = batch_of(3, 6);
  const ProbePass pass = probe_pass(model, probe);
  REQUIRE(pass.logits == probe_logits(model, probe));
  Tape tape;
  TapeScope scope(tape);
  model.logits(probe.inputs);
  REQUIRE(pass.token_share == Approx(token_share(head_input(model), probe.inputs)).epsilon(1e-12));
}

TEST_CASE("read_collapse: a list entry per block, block_collapse's numbers of the same forward pass",
          "[step_measures][collapse]") {
  // The same number, or NaN in both (rezero's branch shares at init).
  const auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  for (const std::string placement : {"post", "pre", "rezero"}) {
    CAPTURE(placement);
    nn::TransformerLM model = test::tiny_model(placement);
    Tape tape;
    TapeScope scope(tape);
    model.logits(test::tiny_ids(3, 6));
    model.logits(test::tiny_ids(2, 5));  // the last pass is the one measured
    StepRecord r, cheap;
    read_collapse(model, r);
    read_collapse(model, cheap, false);
    const std::vector<BlockCollapse> c = block_collapse(model);
    REQUIRE(c.size() == 2);
    for (const std::vector<double>* list : {&r.out_cosine, &r.out_top_share, &r.attn_shared, &r.mlp_shared,
                                            &r.attn_branch_skip, &r.mlp_branch_skip, &r.dead_units, &r.att_entropy_share})
      REQUIRE(list->size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
      CAPTURE(i);
      CHECK(same(r.out_cosine[i], c[i].out_cosine));
      CHECK(same(r.out_top_share[i], c[i].out_top_share));
      CHECK(same(r.attn_shared[i], c[i].attn_shared_share));
      CHECK(same(r.mlp_shared[i], c[i].mlp_shared_share));
      CHECK(same(r.attn_branch_skip[i], c[i].attn_branch_to_skip));
      CHECK(same(r.mlp_branch_skip[i], c[i].mlp_branch_to_skip));
      CHECK(same(r.dead_units[i], c[i].dead_units));
      CHECK(same(r.att_entropy_share[i], c[i].entropy_share));
      CHECK(std::isnan(cheap.out_top_share[i]));
      CHECK(same(cheap.out_cosine[i], c[i].out_cosine));
    }
    // Of the pass of B = 2, T = 5: the mean over heads of attention_entropy over the uniform mean log(t + 1).
    double uniform = 0.0;
    for (std::size_t t = 0; t < 5; ++t) uniform += std::log(static_cast<double>(t + 1)) / 5.0;
    const std::vector<double> h = attention_entropy(model);  // block-major, 2 heads
    CHECK(r.att_entropy_share[1] == Approx((h[2] + h[3]) / 2.0 / uniform).epsilon(1e-12));
  }
}

}  // namespace test_analysis_step_measures
