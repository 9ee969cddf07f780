// The check of exercise 13, for the student: scripts/exercise 13 (docs/coursework.md#ex13)
#include <cstdio>
#include <cstring>
#include <string>

#include "ex13_detach_stats.hpp"
#include "exercise.hpp"
#include "nn/layernorm.hpp"
#include "small_grid.hpp"

namespace check_ex13_detach_stats {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::coursework;

namespace {

// Your backward in place of the true one, in every LayerNorm of every block (scope "blocks.i.ln1",
// "blocks.i.ln2"; not ln_f): the same rewrite of the tape that nn's cut_gradient does for detach-skip.
void detach_ln_statistics(Tape& tape) {
  for (int i = 0; i < static_cast<int>(tape.size()); ++i) {
    Entry& e = tape.entry(i);
    if (std::strcmp(e.op, "layernorm_fused") != 0 || !e.scope.starts_with("blocks.") || !e.backward) continue;
    e.backward = [](const BackwardArgs& g) -> Grads { return layernorm_backward_detached(g.grad, g.in(0), g.in(1)); };
  }
}

}  // namespace

EXERCISE_CASE("ex13", "detach stats: your backward equals nn's LayerNorm backward with NormGrad::detach_stats") {
  const Array x = 0.5 + test::randn({2, 3, 6}, 1), w = 1.0 + 0.3 * test::randn({6}, 2), g = test::randn({2, 3, 6}, 3);
  nn::LayerNormStats stats;
  nn::layernorm_forward(x, w, xt::zeros<Real>({6}), 1e-5, stats);
  const Grads nns = nn::layernorm_backward(g, x, w, stats, nn::NormGrad{false, true});
  const Grads yours = layernorm_backward_detached(g, x, w);
  REQUIRE(yours.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    INFO((k == 0 ? "dx" : k == 1 ? "dweight" : "dbias"));
    REQUIRE_CLOSE(yours[k], nns[k], test::tol(1e-12, 1e-4), test::tol(1e-14, 1e-5));
  }
}

EXERCISE_CASE("ex13", "detach stats: in a Post-LN model it gives the gradients of nn's ln-detach-stats intervention") {
  const nn::Corpus& corpus = small_corpus();
  experiments::ModelOptions m = small_model("post", 0);
  const nn::Batch batch = nn::training_batch(corpus.data, m.batch, m.seq, m.seed, 0);
  auto gradients = [&](bool yours) {
    nn::TransformerLM model(m.config());
    if (!yours) model.set_interventions(nn::parse_interventions("ln-detach-stats"));
    Tape tape;
    TapeScope scope(tape);
    Var loss = model.loss(batch.inputs, batch.targets);
    if (yours) detach_ln_statistics(tape);
    loss.backward();
    std::vector<Array> out;
    for (const nn::NamedParameter& p : model.named_parameters()) out.push_back(p.parameter.grad());
    return out;
  };
  const std::vector<Array> yours = gradients(true), nns = gradients(false);
  nn::TransformerLM names(m.config());
  for (std::size_t i = 0; i < yours.size(); ++i) {
    INFO(names.named_parameters()[i].name);
    REQUIRE_CLOSE(yours[i], nns[i], test::tol(1e-10, 1e-4), test::tol(1e-13, 1e-5));
  }
}

EXERCISE_CASE("ex13", "detach stats: your predictions match what it does to the stuck Post-LN run") {
  const std::string path = answers_dir() + "/" + kDetachStatsFile;
  const auto predictions = read_predictions(path);
  std::string unanswered;
  for (const char* key : {"ln_inputs_smaller", "loss_lower"})
    if (!predictions.count(key) || (predictions.at(key) != "0" && predictions.at(key) != "1"))
      unanswered += std::string("  ") + key + "\n";
  if (!unanswered.empty())
    FAIL("not answered yet: " + path + " has no 0 or 1 for\n" + unanswered + "see docs/coursework.md#ex13");
  double rms[2] = {0, 0}, loss[2] = {0, 0};
  std::string table = "seed  intervention  final loss  verdict   LN-input RMS\n";
  for (unsigned seed = 0; seed < 3; ++seed)
    for (int with = 0; with < 2; ++with) {
      const SmallRun r = with ? small_run("post", 0.03, 0, seed, detach_ln_statistics) : small_run("post", 0.03, 0, seed);
      rms[with] += r.ln_input_rms / 3;
      loss[with] += r.final_loss / 3;
      char line[128];
      std::snprintf(line, sizeof line, "%-4u  %-12s  %-10.4f  %-8s  %.3f\n", seed, with ? "detached" : "none",
                    r.final_loss, experiments::to_string(r.verdict).c_str(), r.ln_input_rms);
      table += line;
    }
  char means[160];
  std::snprintf(means, sizeof means, "mean over the seeds: LN-input RMS %.3f without, %.3f with; final loss %.4f without, %.4f with",
                rms[0], rms[1], loss[0], loss[1]);
  INFO(table << means);
  const bool smaller = rms[1] < rms[0], lower = loss[1] < loss[0];
  INFO("ln_inputs_smaller: predicted " << predictions.at("ln_inputs_smaller") << ", measured " << smaller);
  REQUIRE((predictions.at("ln_inputs_smaller") == "1") == smaller);
  INFO("loss_lower: predicted " << predictions.at("loss_lower") << ", measured " << lower);
  REQUIRE((predictions.at("loss_lower") == "1") == lower);
}

}  // namespace check_ex13_detach_stats
