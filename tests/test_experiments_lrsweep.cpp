// lrsweep: the learning-rate sensitivity of Wortsman et al. against a hand computation; a tiny sweep
// (its tables and files), the same sweep as two shards merged (the same numbers), and its refusals.
#include <algorithm>
#include <cmath>
#include <map>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "check.hpp"
#include "engine/ops/shape.hpp"
#include "analysis/lr_sensitivity.hpp"
#include "analysis/step_measures.hpp"
#include "nn/transformer_lm.hpp"
#include "io_helpers.hpp"
#include "run_binary.hpp"

namespace test_experiments_lrsweep {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::analysis;
using test::run_binary;
namespace fs = std::filesystem;

TEST_CASE("LR sensitivity: mean over lrs of min(final, init) minus the best final loss, by hand",
          "[experiments][lrsweep]") {
  // init 2.0; finals 1.5, 1.2, 2.5 (clipped to 2.0), NaN (diverged: 2.0):
  // mean of {1.5, 1.2, 2.0, 2.0} = 6.7 / 4 = 1.675; best 1.2; sensitivity 0.475.
  REQUIRE(analysis::lr_sensitivity({1.5, 1.2, 2.5, NAN}, 2.0) == Approx(0.475).epsilon(1e-15));
  // Every lr at the best loss: 0.
  REQUIRE(analysis::lr_sensitivity({1.1, 1.1, 1.1}, 2.0) == 0.0);
  // Only one lr learns: (1.0 + 2 + 2) / 3 - 1.0 = 2/3.
  REQUIRE(analysis::lr_sensitivity({INFINITY, 1.0, 3.0}, 2.0) == Approx(2.0 / 3.0).epsilon(1e-15));
  // No finite final loss: no best, NaN.
  REQUIRE(std::isnan(analysis::lr_sensitivity({NAN, NAN}, 2.0)));
}

TEST_CASE("the per-step measures: largest attention logit, log Z and logit RMS, against loops over the formulas",
          "[experiments][lrsweep][step_measures]") {
  for (const char* qk : {"none", "layer"}) {
    INFO("qk-norm " << qk);
    nn::ModelConfig c;
    c.vocab = 7, c.context = 5, c.d_model = 8, c.heads = 2, c.layers = 2, c.seed = 4;
    c.qk_norm = nn::parse_qk_norm(qk);
    nn::TransformerLM model(c);
    Tape tape;
    TapeScope scope(tape);
    const IndexArray ids = {{1, 5, 2, 6, 0}, {3, 3, 4, 0, 6}};
    model.logits(ids);
    const std::vector<double> measured = analysis::attention_logit_max(model);
    REQUIRE(measured.size() == 4);  // 2 blocks x 2 heads
    for (std::size_t b = 0; b < 2; ++b) {
      // q and k again from what the attention read (pre: ln1's output), through the qk-norm's layers
      const nn::CausalSelfAttention& at = model.blocks[b]->attn;
      Var q = at.q.forward(model.blocks[b]->last.attn_in), k = at.k.forward(model.blocks[b]->last.attn_in);
      if (at.q_norm) {
        q = reshape(at.q_norm->forward(reshape(q, {2, 5, 2, 4})), {2, 5, 8});
        k = reshape(at.k_norm->forward(reshape(k, {2, 5, 2, 4})), {2, 5, 8});
      }
      for (std::size_t h = 0; h < 2; ++h) {
        double m = 0.0;
        for (std::size_t n = 0; n < 2; ++n)
          for (std::size_t i = 0; i < 5; ++i)
            for (std::size_t j = 0; j <= i; ++j) {
              double dot = 0.0;
              for (std::size_t f = 0; f < 4; ++f) dot += q.value()(n, i, h * 4 + f) * k.value()(n, j, h * 4 + f);
              m = std::max(m, std::abs(dot) / 2.0);  // sqrt(dh) = 2
            }
        REQUIRE(measured[b * 2 + h] == Approx(m).epsilon(1e-12));
      }
    }
    const analysis::OutputLogits o = analysis::output_logits(model);
    const Array& z = model.last.logits.value();
    double sum = 0.0, mx = -1e300, sq = 0.0;
    for (std::size_t n = 0; n < 2; ++n)
      for (std::size_t t = 0; t < 5; ++t) {
        double e = 0.0;
        for (std::size_t v = 0; v < 7; ++v) e += std::exp(z(n, t, v)), sq += z(n, t, v) * z(n, t, v);
        sum += std::log(e);
        mx = std::max(mx, std::log(e));
      }
    REQUIRE(o.log_z_mean == Approx(sum / 10.0).epsilon(test::tol(1e-13, 1e-5)));
    REQUIRE(o.log_z_max == Approx(mx).epsilon(test::tol(1e-13, 1e-5)));
    REQUIRE(o.rms == Approx(std::sqrt(sq / 70.0)).epsilon(1e-13));
  }
}

namespace {

const std::vector<std::string> tiny = {"--variants", "pre,out+qk+z,post+warmup+gi", "--lrs", "1e-3,1e-1,1",
                                       "--steps", "6", "--warmup", "3", "--seeds", "2", "--layers", "1",
                                       "--d-model", "8", "--heads", "2", "--seq", "6", "--batch", "2",
                                       "--eval-batches", "1", "--jobs", "1"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("a tiny lrsweep prints the sensitivity of each variant and writes its files; two shards merge to it",
          "[experiments][lrsweep]") {
  test::TempDir dir("lrsweep");
  const test::Outcome whole = run_binary("lrsweep", with(tiny, {"--out", "whole"}), dir.path);
  INFO(whole.out << whole.err);
  REQUIRE(whole.status == 0);
  REQUIRE(whole.out.find("18 runs (3 variants x 3 lrs x 2 seeds)") != std::string::npos);
  REQUIRE(whole.out.find("LR sensitivity") != std::string::npos);
  for (const char* v : {"pre", "out+qk+z", "post+warmup+gi"}) REQUIRE(whole.out.find(v) != std::string::npos);
  for (const char* f : {"final_loss.csv", "sensitivity.csv", "runs.csv", "steps.csv", "att_logit_max.csv",
                        "final_loss.png", "att_logit_max.svg"})
    REQUIRE(fs::exists(dir.path / "whole" / f));
  // runs.csv: 18 runs and a header.
  const std::string runs = read(dir.path / "whole" / "runs.csv");
  REQUIRE(std::count(runs.begin(), runs.end(), '\n') == 19);
  // The sensitivity printed per variant is the formula on runs.csv's numbers (recomputed from the file).
  std::stringstream lines(runs);
  std::string line;
  std::getline(lines, line);  // header
  std::map<std::pair<std::string, std::string>, std::pair<std::vector<double>, double>> by_seed;
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    std::stringstream cells(line);
    for (std::string c; std::getline(cells, c, ',');) f.push_back(c);
    auto& [finals, init] = by_seed[{f[0], f[2]}];
    finals.push_back(f[4] == "NaN" || f[4] == "nan" ? NAN : std::stod(f[4]));
    init = std::stod(f[3]);
    REQUIRE(init > std::log(16.0) - 0.5);  // a fresh model: about the uniform loss log V (V = 16), a little above
    REQUIRE(init < std::log(16.0) + 1.5);
  }
  REQUIRE(by_seed.size() == 6);
  const std::string sens = read(dir.path / "whole" / "sensitivity.csv");
  std::stringstream sens_lines(sens);
  std::getline(sens_lines, line);  // header: variant,lr_sensitivity,per_seed,...
  std::size_t variants = 0;
  while (std::getline(sens_lines, line)) {
    std::vector<std::string> f;
    std::stringstream cells(line);
    for (std::string c; std::getline(cells, c, ',');) f.push_back(c);
    std::stringstream per_seed(f[2]);
    for (const char* seed : {"0", "1"}) {
      double printed = NAN;
      per_seed >> printed;
      const auto& [finals, init] = by_seed.at({f[0], seed});
      INFO(f[0] << " seed " << seed);
      REQUIRE(printed == Approx(analysis::lr_sensitivity(finals, init)).epsilon(6e-3).margin(1e-3));  // printed to 3 digits
    }
    ++variants;
  }
  REQUIRE(variants == 3);
  // Two shards and a merge: the same tables.
  for (const char* k : {"1/2", "2/2"}) {
    const test::Outcome shard = run_binary("lrsweep", with(tiny, {"--shard", k, "--out", std::string("s") + k[0]}), dir.path);
    INFO(shard.err);
    REQUIRE(shard.status == 0);
  }
  const test::Outcome merged = run_binary("lrsweep", with(tiny, {"--merge", "s1,s2", "--out", "merged"}), dir.path);
  INFO(merged.err);
  REQUIRE(merged.status == 0);
  REQUIRE(read(dir.path / "merged" / "sensitivity.csv") == sens);
  REQUIRE(read(dir.path / "merged" / "runs.csv") == runs);
}

TEST_CASE("lrsweep refuses an unknown variant option and a refused placement in one line", "[experiments][lrsweep]") {
  test::TempDir dir("lrsweep-bad");
  const test::Outcome bad = run_binary("lrsweep", {"--variants", "pre+qq", "--steps", "2"}, dir.path);
  REQUIRE(bad.status == 2);
  REQUIRE(bad.err.rfind("lrsweep: error: --variants pre+qq: unknown option 'qq' (a variant is a placement with options "
                        "joined by '+': qk, qkrms, z, warmup, gi)", 0) == 0);
  REQUIRE(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
  const test::Outcome refused = run_binary("lrsweep", {"--variants", "out/none", "--steps", "2"}, dir.path);
  REQUIRE(refused.status == 2);
  REQUIRE(refused.err.find("with norm none") != std::string::npos);
  REQUIRE(std::count(refused.err.begin(), refused.err.end(), '\n') == 1);
  const test::Outcome z = run_binary("lrsweep", {"--z-loss", "0.1", "--steps", "2"}, dir.path);
  REQUIRE(z.status == 2);
  REQUIRE(z.err.find("leave --z-loss and --adam-v0 out") != std::string::npos);
}

}  // namespace test_experiments_lrsweep
