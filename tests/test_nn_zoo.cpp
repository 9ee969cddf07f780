// The placement zoo's three axes: names, presets, triples and refusals (nn/config.hpp); config.json
// round trips; Admin's profiling pass; and, for every zoo member, the skip and branch parts of the
// gradient at every stream position.
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "check.hpp"
#include "engine/engine.hpp"
#include "nn/io/json.hpp"
#include "nn/transformer_lm.hpp"
#include "nn_gradcheck.hpp"
#include "nn/residual_edges.hpp"

namespace test_nn_zoo {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;

namespace {

const IndexArray ids = {{0, 3, 4}, {2, 2, 1}};
const IndexArray targets = {{3, 4, 0}, {2, 1, 1}};

std::string triple(const ModelConfig& c) {
  return to_string(c.placement) + "/" + to_string(c.norm) + "/" + to_string(c.residual);
}

ModelConfig applied(const std::string& spec) {
  ModelConfig c;
  apply_placement(c, spec);
  return c;
}

}  // namespace

TEST_CASE("each axis parses its names and prints them back", "[nn][zoo][config]") {
  // The registry (nn/kinds.cpp): row i is the kind of value i, and every name reads back as its kind.
  for (std::size_t i = 0; i < placement_kinds().size(); ++i) {
    const PlacementKind& k = placement_kinds()[i];
    REQUIRE(static_cast<std::size_t>(k.placement) == i);
    REQUIRE(&kind_of(k.placement) == &k);
    REQUIRE(placement_names()[i] == k.name);
    REQUIRE(parse_placement(to_string(k.placement)) == k.placement);
    for (const std::string& alias : k.aliases) REQUIRE(parse_placement(alias) == k.placement);
  }
  for (std::size_t i = 0; i < norm_kinds().size(); ++i) {
    const NormKind& k = norm_kinds()[i];
    REQUIRE(static_cast<std::size_t>(k.norm) == i);
    REQUIRE(norm_names()[i] == k.name);
    REQUIRE(parse_norm(to_string(k.norm)) == k.norm);
    REQUIRE((k.make(4, 0.5) == nullptr) == (k.norm == Norm::none));  // only none makes no norm
  }
  for (std::size_t i = 0; i < residual_kinds().size(); ++i) {
    const ResidualKind& k = residual_kinds()[i];
    REQUIRE(static_cast<std::size_t>(k.residual) == i);
    REQUIRE(residual_names()[i] == k.name);
    REQUIRE(parse_residual(to_string(k.residual)) == k.residual);
  }
  REQUIRE(placement_names() == std::vector<std::string>{"post", "pre", "peri", "mixln", "b2t", "out"});
  REQUIRE(parse_placement("sandwich") == Placement::peri);
  for (const std::string& name : init_names()) REQUIRE(to_string(parse_init(name)) == name);
  for (const std::string& name : qk_norm_names()) REQUIRE(to_string(parse_qk_norm(name)) == name);
  REQUIRE_THROWS_WITH(parse_placement("deepnorm"),
                      Catch::Contains("unknown placement 'deepnorm'") && Catch::Contains("b2t"));
  REQUIRE_THROWS_WITH(parse_norm("batch"), "norm: unknown norm 'batch' (valid: layer, rms, dyt, none)");
  REQUIRE_THROWS_WITH(parse_residual("x"), "residual: unknown residual 'x' (valid: none, deepnorm, admin, rezero, lns)");
  REQUIRE_THROWS_WITH(parse_init("he"), "init: unknown init 'he' (valid: xavier, gpt2)");
}

TEST_CASE("the presets are today's placements as triples, and placement_name names them back", "[nn][zoo][config]") {
  REQUIRE(placement_presets() == std::vector<std::string>{"post", "pre", "peri", "deepnorm", "rezero"});
  REQUIRE(triple(applied("post")) == "post/layer/none");
  REQUIRE(triple(applied("pre")) == "pre/layer/none");
  REQUIRE(triple(applied("peri")) == "peri/layer/none");
  REQUIRE(triple(applied("sandwich")) == "peri/layer/none");
  REQUIRE(triple(applied("deepnorm")) == "post/layer/deepnorm");
  REQUIRE(triple(applied("rezero")) == "pre/none/rezero");
  for (const std::string& preset : placement_presets()) REQUIRE(placement_name(applied(preset)) == preset);
  REQUIRE(placement_name(applied("sandwich")) == "peri");
  // A triple's omitted parts default to layer and none; a triple that is a preset is named as one.
  REQUIRE(triple(applied("mixln")) == "mixln/layer/none");
  REQUIRE(triple(applied("pre/rms")) == "pre/rms/none");
  REQUIRE(placement_name(applied("pre/rms")) == "pre/rms/none");
  REQUIRE(placement_name(applied("post/layer/deepnorm")) == "deepnorm");
  REQUIRE(placement_name(applied("post/layer")) == "post");
  REQUIRE(placement_name(applied("sandwich/dyt/lns")) == "peri/dyt/lns");
  // Every canonical name reads back as itself.
  for (const std::string& member : test::zoo()) REQUIRE(placement_name(applied(member)) == member);
  REQUIRE(test::zoo().size() == 44);
}

TEST_CASE("bad placement specs are one-line errors naming the spec and the valid names or the reason",
          "[nn][zoo][config]") {
  ModelConfig c;
  c.placement = Placement::peri;
  for (const std::string bad : {"postln", "pre/layernorm", "pre/layer/none/x", "", "/rms", "pre/rms/alpha"}) {
    INFO("'" << bad << "'");
    REQUIRE_THROWS_WITH(apply_placement(c, bad), Catch::Contains("placement: unknown placement '" + bad + "'") &&
                                                     Catch::Contains("deepnorm, rezero") &&
                                                     Catch::Contains("P/N/R") && !Catch::Contains("\n"));
  }
  REQUIRE(c.placement == Placement::peri);  // unchanged by a throw
  // Refused combinations: one reason each (docs/placements.md lists them).
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"post/none", "with norm none no norm is left to place"},
      {"b2t/none", "with norm none"},
      {"mixln/none/none", "with norm none"},
      {"pre/layer/deepnorm", "deepnorm up-weights the skip in front of a Post-LN norm"},
      {"b2t/layer/deepnorm", "needs placement post"},
      {"pre/layer/admin", "admin profiles the skip weights of Post-LN blocks"},
      {"mixln/rms/admin", "needs placement post"},
      {"post/layer/rezero", "rezero starts every block as the identity, which a norm on the stream (post) undoes"},
      {"b2t/layer/rezero", "(b2t) undoes"},
      {"pre/none/lns", "lns scales the output of each norm, and with norm none there is none"},
      {"post/layer/lns", "in post a norm's output is the stream itself"},
      {"mixln/layer/lns", "in mixln a norm's output is the stream itself"},
      {"out/none", "with norm none no norm is left to place"},
      {"out/layer/deepnorm", "needs placement post"},
      {"out/rms/admin", "needs placement post"}};
  for (const auto& [spec, why] : refused) {
    INFO(spec);
    REQUIRE_THROWS_WITH(apply_placement(c, spec), Catch::StartsWith("placement '" + spec + "' is refused: ") &&
                                                      Catch::Contains(why) && !Catch::Contains("\n"));
    // The model refuses the same triple set by hand.
    ModelConfig direct = test::gradcheck_config("pre");
    const ModelConfig parsed = [&] {
      ModelConfig p;
      const std::vector<std::string> parts = [&] {
        std::vector<std::string> out(1);
        for (char ch : spec) {
          if (ch == '/') out.emplace_back();
          else out.back().push_back(ch);
        }
        return out;
      }();
      p.placement = parse_placement(parts[0]);
      p.norm = parts.size() > 1 ? parse_norm(parts[1]) : Norm::layer;
      p.residual = parts.size() > 2 ? parse_residual(parts[2]) : Residual::none;
      return p;
    }();
    direct.placement = parsed.placement;
    direct.norm = parsed.norm;
    direct.residual = parsed.residual;
    REQUIRE_THROWS_WITH(TransformerLM(direct), Catch::StartsWith("TransformerLM: placement '") && Catch::Contains(why));
  }
  // 6 x 4 x 5 = 120 triples: 44 are built, each of the other 76 is refused with a reason.
  std::size_t refused_count = 0;
  for (const PlacementKind& p : placement_kinds())
    for (const NormKind& n : norm_kinds())
      for (const ResidualKind& r : residual_kinds()) {
        ModelConfig t;
        t.placement = p.placement;
        t.norm = n.norm;
        t.residual = r.residual;
        refused_count += !refusal(t).empty();
      }
  REQUIRE(refused_count == 76);
}

TEST_CASE("config.json carries the three axes, and a file without them is refused", "[nn][zoo][config]") {
  for (const std::string& member : test::zoo()) {
    INFO(member);
    ModelConfig c = test::gradcheck_config(member);
    c.dyt_alpha = 0.3;
    c.layers = 6;
    if (c.placement == Placement::mixln) c.mixln_post = 4;
    const std::string text = model_config_json(c).dump(2);
    REQUIRE(text.find("\"norm\"") != std::string::npos);
    REQUIRE(text.find("\"residual\"") != std::string::npos);
    REQUIRE((text.find("\"mixln_post\": 4") != std::string::npos) == (c.placement == Placement::mixln));
    REQUIRE((text.find("\"dyt_alpha\": 0.3") != std::string::npos) == (c.norm == Norm::dyt));
    const nlohmann::json doc = parse_json(text, "config.json");
    const ModelConfig back = model_config_from_json(doc, "config.json");
    REQUIRE(placement_name(back) == member);
    REQUIRE(architecture_difference(c, back).empty());
    if (c.norm == Norm::dyt) REQUIRE(back.dyt_alpha == 0.3);
    if (c.placement == Placement::mixln) REQUIRE(back.mixln_post_blocks() == 4);
  }
  // Each of the three axes is a member of its own: a file without "norm" or "residual" is refused.
  const std::string no_axes = "{\"vocab\": 5, \"context\": 3, \"d_model\": 4, \"heads\": 2, \"layers\": 2, \"d_ff\": 8, "
                              "\"placement\": \"deepnorm\", \"init\": \"xavier\", \"seed\": 1}";
  const nlohmann::json old = parse_json(no_axes, "old.json");
  REQUIRE_THROWS_WITH(model_config_from_json(old, "old.json"), Catch::Contains("old.json: key 'norm' not found"));
  const std::string refused = "{\"vocab\": 5, \"context\": 3, \"d_model\": 4, \"heads\": 2, \"layers\": 2, \"d_ff\": 8, "
                              "\"placement\": \"pre\", \"norm\": \"none\", \"residual\": \"lns\"}";
  const nlohmann::json doc = parse_json(refused, "c.json");
  REQUIRE_THROWS_WITH(model_config_from_json(doc, "c.json"),
                      Catch::StartsWith("c.json: placement is not a placement: 'pre/none/lns' is refused"));
  REQUIRE(architecture_difference(test::gradcheck_config("pre"), test::gradcheck_config("pre/rms")) ==
          "placement is pre in one and pre/rms/none in the other");
}

TEST_CASE("at every stream position of every zoo member, skip + branch = the gradient", "[nn][zoo][skip]") {
  for (const std::string& member : test::zoo()) {
    for (bool jittered : {false, true}) {
      INFO(member << (jittered ? ", jittered" : ", at init"));
      TransformerLM model(test::gradcheck_config(member));
      if (jittered) test::jitter(model.named_parameters(), 0.2, 11);
      Tape tape;
      TapeScope scope(tape);
      tape.keep_contributions = true;
      model.loss(ids, targets).backward();
      std::vector<Var> positions = {model.last.emb};
      for (const auto& block : model.blocks) {
        positions.push_back(block->last.mid);
        positions.push_back(block->last.out);
      }
      positions.pop_back();  // the top of the stream has no skip path above it
      for (std::size_t k = 0; k < positions.size(); ++k) {
        INFO("position " << k);
        const SkipBranch s = split_skip_branch(positions[k]);
        REQUIRE(xt::allclose(s.skip + s.branch, positions[k].grad(), test::tol(1e-13, 1e-4), test::tol(1e-15, 1e-5)));
        REQUIRE(s.skip_parts >= 1);
        REQUIRE(s.branch_parts >= 1);
        // A B2T block's input is read by two skip edges: the attention's add and h + x.
        const bool b2t_input = member.starts_with("b2t") && k % 2 == 0;
        REQUIRE(s.skip_parts == (b2t_input ? 2u : 1u));
      }
    }
  }
}

TEST_CASE("Admin's omegas come from one profiling pass, as in Liu et al.'s reference code", "[nn][zoo][admin]") {
  for (const std::string member : {"post/layer/admin", "post/rms/admin", "post/dyt/admin"}) {
    INFO(member);
    ModelConfig c = test::gradcheck_config(member);
    c.layers = 3;
    TransformerLM model(c);
    // The constructor profiled on its own batch: every omega is a constant vector, and the first is 1.
    REQUIRE((model.blocks[0]->admin_attn.value() == Array(xt::ones<Real>({4}))));
    for (const auto& block : model.blocks)
      for (const Parameter* omega : {&block->admin_attn, &block->admin_mlp})
        REQUIRE(xt::amax(xt::abs(omega->value() - omega->value()(0)))() == 0.0);
    // Profile on a batch of our own, then replay it: omega_1 = 1, and each next omega is
    // sqrt(Var(omega_i (.) s_i) + Var(F_i(s_i))) over every element of the batch, in forward order.
    const IndexArray batch = {{1, 4, 0}, {3, 3, 2}, {0, 1, 2}};
    model.profile_admin(batch);
    Tape tape;
    TapeScope scope(tape);
    model.logits(batch);
    auto var = [](const Array& a) {
      const double m = xt::mean(a)();
      return xt::mean((a - m) * (a - m))();
    };
    double expected = 1.0;
    for (const auto& block : model.blocks) {
      const BlockTrace& t = block->last;
      REQUIRE(block->admin_attn.value()(2) == Approx(expected).epsilon(test::tol(1e-12, 1e-5)));
      expected = std::sqrt(var(t.attn_skip.value()) + var(t.attn_branch.value()));
      REQUIRE(block->admin_mlp.value()(2) == Approx(expected).epsilon(test::tol(1e-12, 1e-5)));
      expected = std::sqrt(var(t.mlp_skip.value()) + var(t.mlp_branch.value()));
    }
    // With a norm that normalizes, every skip's variance is omega_i^2 and the weight grows with depth.
    if (c.norm != Norm::dyt) REQUIRE(model.blocks[2]->admin_mlp.value()(0) > model.blocks[0]->admin_mlp.value()(0));
  }
  TransformerLM post(test::gradcheck_config("post"));
  REQUIRE_THROWS_WITH(post.profile_admin(ids), Catch::Contains("not admin"));
}

}  // namespace test_nn_zoo
