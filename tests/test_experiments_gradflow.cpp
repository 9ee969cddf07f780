// The exact parts of gradflow and amplification (analysis/probe.hpp): the log-log slope fit,
// the grouping of parameter names, group gradient norms against the parameters' own gradients, and the
// batch that --dump writes being the batch that was measured. No statistical trends here.
#include <cmath>
#include <filesystem>
#include <map>

#include "nn/data/markov.hpp"
#include "check.hpp"
#include "analysis/probe.hpp"
#include "experiments/lib/graph.hpp"
#include "nn/io/npy.hpp"
#include "nn/transformer_lm.hpp"

namespace test_experiments_gradflow {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::experiments;
using namespace gs::analysis;

namespace {

nn::ModelConfig tiny(const std::string& placement) {
  nn::ModelConfig c{.vocab = 8, .context = 4, .d_model = 8, .heads = 2, .layers = 2, .seed = 3};
  nn::apply_placement(c, placement);
  return c;
}

// Runs the loss of `model` on batch 0 of seed 3 and its backward pass.
void backward_once(nn::TransformerLM& model) {
  const nn::Batch b = MarkovBatches(model.config.vocab, 2, model.config.context, 3).batch(0);
  Tape::current().reset();
  model.zero_grad();
  model.loss(b.inputs, b.targets).backward();
  Tape::current().reset();
}

}  // namespace

TEST_CASE("loglog_fit recovers the exponent and the constant of a power law exactly", "[experiments]") {
  const std::vector<double> L = {2, 4, 8, 16, 32};
  std::vector<double> y1, y2;
  for (double x : L) {
    y1.push_back(3.0 * std::pow(x, -0.5));  // Xiong et al.'s Pre-LN law
    y2.push_back(0.25 * x);
  }
  const LineFit f1 = loglog_fit(L, y1), f2 = loglog_fit(L, y2);
  REQUIRE(f1.slope == Approx(-0.5).margin(1e-12));
  REQUIRE(f1.intercept == Approx(std::log(3.0)).margin(1e-12));
  REQUIRE(f2.slope == Approx(1.0).margin(1e-12));
  REQUIRE(f2.intercept == Approx(std::log(0.25)).margin(1e-12));
  // Two points: the slope through them.
  REQUIRE(loglog_fit({16, 32}, {0.119, 0.0807}).slope == Approx(std::log(0.0807 / 0.119) / std::log(2.0)));
}

TEST_CASE("loglog_fit gives NaN where no line exists", "[experiments]") {
  REQUIRE(std::isnan(loglog_fit({2, 4}, {1.0, 0.0}).slope));   // a zero norm (ReZero's branch weights)
  REQUIRE(std::isnan(loglog_fit({2, 4}, {1.0, -1.0}).slope));
  REQUIRE(std::isnan(loglog_fit({2}, {1.0}).slope));           // one point
  REQUIRE(std::isnan(loglog_fit({4, 4}, {1.0, 2.0}).slope));   // one depth twice
  REQUIRE(std::isnan(loglog_fit({2, 4}, {1.0, NAN}).slope));
}

TEST_CASE("parameter names map to their groups", "[experiments]") {
  int layer = -2;
  REQUIRE(block_group("blocks.3.mlp.fc2.weight", &layer) == "fc2");
  REQUIRE(layer == 3);
  REQUIRE(block_group("blocks.12.attn.q.weight", &layer) == "q");
  REQUIRE(layer == 12);
  REQUIRE(block_group("blocks.0.attn.o.weight") == "o");
  REQUIRE(block_group("blocks.0.mlp.fc1.weight") == "fc1");
  REQUIRE(block_group("blocks.0.ln2.weight") == "ln");
  REQUIRE(block_group("blocks.0.ln_mlp_out.weight") == "ln");
  REQUIRE(block_group("blocks.0.rezero_attn") == "rezero");
  REQUIRE(block_group("blocks.0.ln2.bias", &layer).empty());  // biases are only in "block"
  REQUIRE(layer == 0);
  REQUIRE(block_group("blocks.0.attn.q.bias").empty());
  REQUIRE(block_group("head.weight", &layer).empty());
  REQUIRE(layer == -1);
  REQUIRE(model_group("tok_emb.weight") == "tok_emb");
  REQUIRE(model_group("ln_f.bias") == "ln_f");
  REQUIRE(model_group("head.bias") == "head");
  REQUIRE(model_group("blocks.0.ln1.weight").empty());
}

TEST_CASE("a group's gradient norm is the norm of its parameters' gradients taken together", "[experiments]") {
  for (const std::string placement : {"post", "peri", "rezero"}) {
    INFO(placement);
    nn::TransformerLM model(tiny(placement));
    backward_once(model);
    const GradNorms n = grad_norms(model.named_parameters(), 2);
    REQUIRE(n.blocks.size() == 2);
    const nn::Block& b = *model.blocks[1];
    REQUIRE(n.blocks[1].at("fc2") == norm(b.mlp.fc2.weight.grad()));
    REQUIRE(n.blocks[1].at("q") == norm(b.attn.q.weight.grad()));
    REQUIRE(n.model.at("tok_emb") == norm(model.tok_emb.weight.grad()));

    // "ln": the LN gains of the block; "block": every parameter of it; "total": every parameter.
    double ln = 0.0, block = 0.0, total = 0.0;
    for (const nn::NamedParameter& p : model.named_parameters()) {
      const double g = norm(p.parameter.grad());
      total += g * g;
      if (p.name.rfind("blocks.1.", 0) != 0) continue;
      block += g * g;
      if (p.name.find(".ln") != std::string::npos && p.name.ends_with(".weight")) ln += g * g;
    }
    REQUIRE(n.blocks[1].at("block") == Approx(std::sqrt(block)).epsilon(1e-12));
    REQUIRE(n.model.at("total") == Approx(std::sqrt(total)).epsilon(1e-12));
    if (placement == "rezero") {
      REQUIRE(n.blocks[1].count("ln") == 0);
      REQUIRE(n.blocks[1].count("rezero") == 1);
      REQUIRE(n.blocks[1].at("fc2") == 0.0);  // a_mlp = 0 at init: no gradient reaches the branch
    } else {
      REQUIRE(n.blocks[1].at("ln") == Approx(std::sqrt(ln)).epsilon(1e-12));
      REQUIRE(n.blocks[1].count("rezero") == 0);
    }
  }
}

TEST_CASE("batch 0 of MarkovBatches is the batch that --dump writes", "[experiments]") {
  nn::TransformerLM model(tiny("pre"));
  const auto dir = std::filesystem::temp_directory_path() / "gradscope_test_gradflow_dump";
  std::filesystem::remove_all(dir);
  dump_model(dir.string(), model, nn::dump_batch(nn::dump_corpus(8, 2, 4, 5), 2, 4, 5));
  const MarkovBatches batches(8, 2, 4, 5);
  const nn::Batch b = batches.batch(0);
  const bool same_inputs = nn::read_npy_i8(dir / "batch" / "inputs.npy", shape_of(b.inputs)) == b.inputs;
  const bool same_targets = nn::read_npy_i8(dir / "batch" / "targets.npy", shape_of(b.targets)) == b.targets;
  const bool other_batch_differs = batches.batch(1).inputs != b.inputs;
  REQUIRE(same_inputs);
  REQUIRE(same_targets);
  REQUIRE(other_batch_differs);
  std::filesystem::remove_all(dir);
}

}  // namespace test_experiments_gradflow
