// The backward-pass interventions (nn/interventions.hpp): each changes what it says and nothing else.
// The forward values stay bit for bit; the gradient changes only where the intervention acts.
#include <cmath>
#include <tuple>

#include "check.hpp"
#include "engine/engine.hpp"
#include "nn/layernorm.hpp"
#include "nn/optim.hpp"
#include "nn/rmsnorm.hpp"
#include "nn/transformer_lm.hpp"
#include "nn_gradcheck.hpp"
#include "engine/tools/inspect.hpp"
#include "nn/residual_edges.hpp"

namespace test_nn_interventions {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;

namespace {

const IndexArray ids = {{0, 3, 4}, {2, 2, 1}};
const IndexArray targets = {{3, 4, 0}, {2, 1, 1}};

// A model with every parameter perturbed, so no norm weight is 1 and no bias 0.
std::unique_ptr<TransformerLM> model_of(const std::string& member, const Interventions& iv = {}) {
  auto model = std::make_unique<TransformerLM>(test::gradcheck_config(member));
  test::jitter(model->named_parameters(), 0.2, 13);
  model->set_interventions(iv);
  return model;
}

// Where a block's norm reads its input and writes its output: (input, output) per norm, in forward order.
// A norm site read off the BlockTrace here, independently of nn::NormTrace (which nn records itself).
struct SiteUnderTest {
  const NormLayer* norm;
  Var in, out;
};
std::vector<SiteUnderTest> norm_sites(const TransformerLM& model) {
  std::vector<SiteUnderTest> sites;
  for (const auto& b : model.blocks) {
    const BlockTrace& t = b->last;
    const bool post = b->placement == Placement::post || b->placement == Placement::b2t;
    if (post) {
      sites.push_back({b->ln1.get(), t.attn_sum, t.mid});
      sites.push_back({b->ln2.get(), t.mlp_sum, t.out});
    } else {
      sites.push_back({b->ln1.get(), t.input, t.attn_in});
      sites.push_back({b->ln2.get(), t.mid, t.mlp_in});
    }
  }
  return sites;
}

// What the norm entry `out` sent back into `in` (its only contribution to it).
Array sent(const Var& in, const Var& out) {
  for (const ContributionInfo& c : contributions(in))
    if (c.from == out.index()) return c.grad;
  FAIL("no contribution from tape index " << out.index());
  return {};
}

// sigma (LayerNorm: sqrt(var + eps); RMSNorm: sqrt(mean(x^2) + eps)) of every row of x, as (..., 1).
Array row_sigma(const Array& x, bool rms) {
  Shape s = shape_of(x);
  s.back() = 1;
  Array sigma = Array::from_shape(s);
  const std::size_t d = x.shape().back();
  for (std::size_t r = 0; r < x.size() / d; ++r) {
    double mu = 0.0, var = 0.0;
    for (std::size_t i = 0; i < d; ++i) mu += x.data()[r * d + i] / static_cast<double>(d);
    if (rms) mu = 0.0;
    for (std::size_t i = 0; i < d; ++i) var += std::pow(x.data()[r * d + i] - mu, 2) / static_cast<double>(d);
    sigma.data()[r] = std::sqrt(var + 1e-5);
  }
  return sigma;
}

// The mean of every row of a, as (..., 1).
Array row_mean(const Array& a) {
  Shape s = shape_of(a);
  const std::size_t d = s.back();
  s.back() = 1;
  Array m = xt::zeros<Real>(s);
  for (std::size_t r = 0; r < m.size(); ++r)
    for (std::size_t i = 0; i < d; ++i) m.data()[r] += a.data()[r * d + i] / static_cast<double>(d);
  return m;
}

// The norm's true backward on a given output gradient, for x: through the named backward functions.
Array true_dx(const NormLayer& n, const Array& g, const Array& x, NormGrad mode = {}) {
  if (const auto* ln = dynamic_cast<const LayerNorm*>(&n)) {
    LayerNormStats stats;
    layernorm_forward(x, ln->weight.value(), ln->bias.value(), ln->eps, stats);
    return layernorm_backward(g, x, ln->weight.value(), stats, mode)[0];
  }
  const auto& rms = dynamic_cast<const RMSNorm&>(n);
  Array rstd;
  rmsnorm_forward(x, rms.weight.value(), rms.eps, rstd);
  return rmsnorm_backward(g, x, rms.weight.value(), rstd, mode)[0];
}

}  // namespace

TEST_CASE("interventions parse from their names and print back", "[nn][interventions]") {
  REQUIRE(intervention_names() ==
          std::vector<std::string>{"ln-undo-gain", "ln-detach-stats", "detach-skip", "detach-branch", "freeze-ln"});
  REQUIRE_FALSE(parse_interventions("").any());
  REQUIRE_FALSE(parse_interventions("none").any());
  REQUIRE(to_string(Interventions{}) == "none");
  const Interventions iv = parse_interventions("freeze-ln,ln-undo-gain");
  REQUIRE(iv.ln_undo_gain);
  REQUIRE(iv.freeze_ln);
  REQUIRE_FALSE(iv.detach_skip);
  REQUIRE(to_string(iv) == "ln-undo-gain,freeze-ln");
  for (const std::string& name : intervention_names()) REQUIRE(to_string(parse_interventions(name)) == name);
  REQUIRE_THROWS_WITH(parse_interventions("ln-undo-gain,detach"),
                      "intervene: unknown intervention 'detach' (valid: ln-undo-gain, ln-detach-stats, detach-skip, "
                      "detach-branch, freeze-ln)");
  REQUIRE_THROWS_WITH(parse_interventions("detach-skip,"), Catch::Contains("unknown intervention ''"));
}

TEST_CASE("interventions a model cannot have are refused with the reason", "[nn][interventions]") {
  TransformerLM dyt(test::gradcheck_config("pre/dyt")), none(test::gradcheck_config("rezero")), pre(test::gradcheck_config("pre"));
  REQUIRE_THROWS_WITH(dyt.set_interventions(parse_interventions("ln-undo-gain")),
                      Catch::StartsWith("intervene 'ln-undo-gain' is refused for pre/dyt/none: ") &&
                          Catch::Contains("DyT computes none"));
  REQUIRE_THROWS_WITH(none.set_interventions(parse_interventions("ln-detach-stats")), Catch::Contains("norm none"));
  REQUIRE_THROWS_WITH(none.set_interventions(parse_interventions("freeze-ln")), Catch::Contains("norm none"));
  REQUIRE_THROWS_WITH(pre.set_interventions(parse_interventions("detach-skip,detach-branch")),
                      Catch::Contains("no gradient would reach any block"));
  REQUIRE_FALSE(pre.interventions().any());  // unchanged by a refusal
  dyt.set_interventions(parse_interventions("freeze-ln,detach-skip"));  // DyT can be frozen
  none.set_interventions(parse_interventions("detach-branch"));
}

TEST_CASE("no intervention changes a forward value", "[nn][interventions]") {
  for (const std::string member : {"post", "pre", "peri", "deepnorm", "rezero", "b2t", "mixln", "pre/rms/lns",
                                   "post/layer/admin"}) {
    const Array base = [&] {
      auto m = model_of(member);
      Tape tape;
      TapeScope scope(tape);
      return Array(m->logits(ids).value());
    }();
    for (const std::string& name : intervention_names()) {
      Interventions iv = parse_interventions(name);
      if (!refusal(iv, test::gradcheck_config(member)).empty()) continue;
      INFO(member << " with " << name);
      auto m = model_of(member, iv);
      Tape tape;
      TapeScope scope(tape);
      REQUIRE((m->logits(ids).value() == base));
    }
  }
}

TEST_CASE("ln-undo-gain: each norm sends its input sigma times the true gradient, per position",
          "[nn][interventions][ln]") {
  for (const std::string member : {"post", "pre", "peri", "b2t", "pre/rms", "post/rms/admin"}) {
    for (bool fused : {true, false}) {
      INFO(member << (fused ? " fused" : " composite"));
      auto m = model_of(member, parse_interventions("ln-undo-gain"));
      m->set_fused_norms(fused);
      Tape tape;
      TapeScope scope(tape);
      tape.keep_contributions = true;
      m->loss(ids, targets).backward();
      const bool rms = member.find("rms") != std::string::npos;
      for (const SiteUnderTest& s : norm_sites(*m)) {
        // The gradient that reached the norm's output, through the true backward, times sigma; for the
        // composite form the norm's first entry is the identity that applies sigma.
        const Array expected = true_dx(*s.norm, s.out.grad(), s.in.value()) * row_sigma(s.in.value(), rms);
        const int first = fused ? s.out.index() : [&] {
          for (const ContributionInfo& c : contributions(s.in))
            if (c.op == "scale_gradient") return c.from;
          return -1;
        }();
        REQUIRE(first >= 0);
        Array got;
        for (const ContributionInfo& c : contributions(s.in))
          if (c.from == first) got = c.grad;
        REQUIRE(xt::allclose(got, expected, test::tol(1e-11, 1e-4), test::tol(1e-14, 1e-5)));
        REQUIRE_FALSE(xt::allclose(got, true_dx(*s.norm, s.out.grad(), s.in.value()), 1e-3, 1e-6));  // it did change
      }
    }
  }
}

TEST_CASE("ln-detach-stats: each norm's input gradient is the composite's with mean and variance constant",
          "[nn][interventions][ln]") {
  for (const std::string member : {"post", "pre", "pre/rms"}) {
    INFO(member);
    auto m = model_of(member, parse_interventions("ln-detach-stats"));
    Tape tape;
    TapeScope scope(tape);
    tape.keep_contributions = true;
    m->loss(ids, targets).backward();
    for (const SiteUnderTest& s : norm_sites(*m)) {
      // The composite formula, its statistics taken as constants from the input's values.
      Tape local;
      TapeScope on(local);
      Var x = local.leaf(s.in.value());
      Var y;
      if (const auto* ln = dynamic_cast<const LayerNorm*>(s.norm)) {
        Var mu = local.constant(row_mean(x.value()));
        Var xc = x - mu;
        Var var = local.constant(row_mean(xc.value() * xc.value()));
        y = xc / sqrt(var + 1e-5) * local.constant(ln->weight.value()) + local.constant(ln->bias.value());
      } else {
        const auto& rms = dynamic_cast<const RMSNorm&>(*s.norm);
        Var ms = local.constant(row_mean(x.value() * x.value()));
        y = x / sqrt(ms + 1e-5) * local.constant(rms.weight.value());
      }
      y.backward(s.out.grad());
      REQUIRE(xt::allclose(sent(s.in, s.out), x.grad(), test::tol(1e-11, 1e-4), test::tol(1e-14, 1e-5)));
      REQUIRE_FALSE(xt::allclose(x.grad(), true_dx(*s.norm, s.out.grad(), s.in.value()), 1e-3, 1e-6));
    }
  }
}

TEST_CASE("detach-skip / detach-branch: that part of the gradient is exactly zero at every stream position",
          "[nn][interventions][detach]") {
  for (const std::string member : {"post", "pre", "peri", "deepnorm", "rezero", "b2t", "mixln", "post/layer/admin",
                                   "pre/layer/lns"}) {
    // The model without intervention, for the top block's parts, which nothing above has changed.
    auto base = model_of(member);
    Tape base_tape;
    TapeScope base_scope(base_tape);
    base_tape.keep_contributions = true;
    base->loss(ids, targets).backward();
    const SkipBranch top_base = split_skip_branch(base->blocks.back()->last.mid);
    for (const std::string name : {"detach-skip", "detach-branch"}) {
      INFO(member << " with " << name);
      const bool skip = name == std::string("detach-skip");
      auto m = model_of(member, parse_interventions(name));
      Tape tape;
      TapeScope scope(tape);
      tape.keep_contributions = true;
      m->loss(ids, targets).backward();
      std::vector<Var> positions = {m->last.emb};
      for (const auto& block : m->blocks) {
        positions.push_back(block->last.mid);
        positions.push_back(block->last.out);
      }
      positions.pop_back();
      for (std::size_t k = 0; k < positions.size(); ++k) {
        INFO("position " << k);
        const SkipBranch s = split_skip_branch(positions[k]);
        const Array& cut = skip ? s.skip : s.branch;
        REQUIRE(xt::amax(xt::abs(cut))() == 0.0);
      }
      // At the top block's mid the other part is what it was without the intervention, bit for bit.
      const SkipBranch top = split_skip_branch(m->blocks.back()->last.mid);
      REQUIRE(((skip ? top.branch : top.skip) == (skip ? top_base.branch : top_base.skip)));
    }
  }
}

TEST_CASE("freeze-ln: no norm parameter moves under an optimizer step, every other one does",
          "[nn][interventions][freeze]") {
  for (const std::string member : {"post", "pre", "pre/dyt"}) {
    INFO(member);
    auto m = model_of(member, parse_interventions("freeze-ln"));
    const auto before = m->named_parameters();
    std::vector<Array> values;
    for (const NamedParameter& p : before) values.push_back(p.parameter.value());
    Adam adam(m->named_parameters());
    Tape tape;
    TapeScope scope(tape);
    m->zero_grad();
    m->loss(ids, targets).backward();
    adam.step(1e-2);
    for (std::size_t i = 0; i < before.size(); ++i) {
      const std::string& name = before[i].name;
      INFO(name);
      const bool block_norm = name.starts_with("blocks.") && (name.find(".ln") != std::string::npos);
      if (block_norm) {
        REQUIRE((before[i].parameter.value() == values[i]));                   // not updated
        REQUIRE(xt::amax(xt::abs(before[i].parameter.grad()))() == 0.0);     // no gradient accumulated
      } else {
        REQUIRE((before[i].parameter.value() != values[i]));  // ln_f (not in a block) and the rest train
      }
    }
    m->set_interventions({});  // off again: the norms get gradients
    tape.reset();
    m->zero_grad();
    m->loss(ids, targets).backward();
    for (const NamedParameter& p : m->named_parameters())
      if (p.name == "blocks.0.ln1.weight") REQUIRE(xt::amax(xt::abs(p.parameter.grad()))() > 0.0);
  }
}

TEST_CASE("a model with interventions still passes a gradient check where they leave the gradient true",
          "[nn][interventions]") {
  // freeze-ln changes no gradient of the others: every parameter that still wants one gets the true one.
  auto m = model_of("post", parse_interventions("freeze-ln"));
  std::vector<NamedParameter> trained;
  for (const NamedParameter& p : m->named_parameters())
    if (p.parameter.requires_grad()) trained.push_back(p);
  REQUIRE(trained.size() < m->named_parameters().size());
  REQUIRE_PARAM_GRADCHECK(trained, {}, [&](const std::vector<Var>&) { return m->loss(ids, targets); });
}

// ---- BranchControl: changes the forward, so its backward must be the true gradient of the new model ----

namespace {

// The rms over the last axis of row r of a (R, C) view of x.
double row_rms(const Array& x, std::size_t r) {
  const std::size_t d = x.shape().back();
  double s = 0.0;
  for (std::size_t i = 0; i < d; ++i) s += x.data()[r * d + i] * x.data()[r * d + i];
  return std::sqrt(s / static_cast<double>(d));
}

}  // namespace

TEST_CASE("branch clamp: every branch is at most c times its skip's rms, and some were scaled down",
          "[nn][interventions]") {
  for (const char* member : {"post", "pre"}) {
    auto m = model_of(member);
    const double c = 0.5;
    m->set_branch_control({c, 1.0});
    m->loss(ids, targets);
    std::size_t clamped = 0, rows = 0;
    for (const auto& b : m->blocks)
      for (const auto& [skip, branch, sum] : {std::tuple{b->last.attn_skip, b->last.attn_branch, b->last.attn_sum},
                                              std::tuple{b->last.mlp_skip, b->last.mlp_branch, b->last.mlp_sum}}) {
        const Array added = sum.value() - skip.value();  // s * branch, what the add received
        for (std::size_t r = 0; r < added.size() / added.shape().back(); ++r, ++rows) {
          const double skip_rms = row_rms(skip.value(), r), before = row_rms(branch.value(), r);
          CHECK(row_rms(added, r) <= c * skip_rms * (1 + test::tol(1e-9, 1e-5)) + 1e-12);
          if (before > c * skip_rms) {
            ++clamped;
            CHECK(row_rms(added, r) == Approx(c * skip_rms).epsilon(1e-6));
          } else {
            CHECK(row_rms(added, r) == Approx(before).epsilon(test::tol(1e-12, 1e-5)));
          }
        }
      }
    INFO(member << ": " << clamped << " of " << rows << " positions clamped");
    CHECK(clamped > 0);
    CHECK(clamped < rows);
  }
}

TEST_CASE("branch scale k: each add receives k times its branch", "[nn][interventions]") {
  auto m = model_of("pre");
  m->set_branch_control({0.0, 3.0});
  m->loss(ids, targets);
  for (const auto& b : m->blocks)
    CHECK(xt::allclose(b->last.attn_sum.value() - b->last.attn_skip.value(), 3.0 * b->last.attn_branch.value(), test::tol(1e-12, 1e-4), test::tol(1e-14, 1e-5)));
}

TEST_CASE("a model with a branch clamp or scale passes a gradient check", "[nn][interventions]") {
  for (const char* member : {"post", "pre"})
    for (const BranchControl control : {BranchControl{0.5, 1.0}, BranchControl{0.0, 3.0}, BranchControl{0.7, 2.0}}) {
      INFO(member << " clamp " << control.clamp << " scale " << control.scale);
      auto m = model_of(member);
      m->set_branch_control(control);
      REQUIRE_PARAM_GRADCHECK(m->named_parameters(), {}, [&](const std::vector<Var>&) { return m->loss(ids, targets); });
    }
}

TEST_CASE("a branch control that means nothing is refused", "[nn][interventions]") {
  auto m = model_of("post");
  CHECK_THROWS_WITH(m->set_branch_control({-1.0, 1.0}), Catch::Contains("set_branch_control") && Catch::Contains("clamp"));
  CHECK_THROWS_WITH(m->set_branch_control({0.0, 0.0}), Catch::Contains("scale"));
  CHECK_THROWS_WITH(m->set_branch_control({0.0, NAN}), Catch::Contains("finite"));
}

}  // namespace test_nn_interventions
