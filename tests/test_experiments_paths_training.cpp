// paths_training: a tiny run's CSV files hold, at step 0, analysis::path_profile's, norm_site_terms'
// and block_spectrum's numbers for the cell's fresh model on its probe batch (recomputed here); at
// every step the shares sum to 1, Pre-LN's skip gain is exactly 1, the singular values come largest
// first with Lanczos converged; a profile step past --steps is refused naming the flag.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "check.hpp"
#include "csv_reader.hpp"
#include "io_helpers.hpp"
#include "run_binary.hpp"
#include "analysis/block_spectrum.hpp"
#include "analysis/ln_terms.hpp"
#include "analysis/paths.hpp"
#include "engine/engine.hpp"
#include "nn/data/corpus.hpp"
#include "nn/train.hpp"
#include "nn/transformer_lm.hpp"

namespace test_experiments_paths_training {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::read_csv;
using test::run_binary;

namespace {

const std::vector<std::string> tiny = {"--layers", "2", "--d-model", "8", "--heads", "2", "--seq", "6", "--batch", "3",
                                       "--vocab", "8", "--seeds", "2", "--steps", "3", "--profile-steps", "0,3",
                                       "--placements", "post,pre", "--warmups", "0", "--eval-batches", "2"};

// The rows of one run, seed and step (and, in profile.csv, one node: "" takes every row).
std::vector<std::map<std::string, std::string>> rows_of(const std::vector<std::map<std::string, std::string>>& csv,
                                                        const std::string& placement, const std::string& seed,
                                                        const std::string& step, const std::string& node = "") {
  std::vector<std::map<std::string, std::string>> out;
  for (const auto& row : csv)
    if (row.at("placement") == placement && row.at("seed") == seed && row.at("step") == step &&
        (node.empty() || row.at("node") == node))
      out.push_back(row);
  return out;
}

}  // namespace

TEST_CASE("paths_training: its CSV files hold the measures of each run", "[experiments][paths]") {
  test::TempDir dir("paths_training_csv");
  std::vector<std::string> args = tiny;
  args.insert(args.end(), {"--out", "o"});
  const test::Outcome r = run_binary("paths_training", args, dir.path);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  const auto profile = read_csv(dir.path / "o" / "profile.csv");
  const auto norms = read_csv(dir.path / "o" / "norm_terms.csv");
  const auto spectra = read_csv(dir.path / "o" / "spectrum.csv");
  for (const std::string placement : {"post", "pre"})
    for (const std::string seed : {"0", "1"}) {
      INFO(placement << " seed " << seed);
      // Step 0: the cell's fresh model on its probe batch, as the binary makes them.
      const unsigned s = static_cast<unsigned>(std::stoul(seed));
      const nn::Corpus corpus = nn::build_corpus(nn::CorpusOptions{}, 8, 0, 6);  // one corpus, of --seed 0
      nn::ModelConfig c{.vocab = corpus.data.vocab(), .context = 6, .d_model = 8, .heads = 2, .layers = 2, .seed = s};
      nn::apply_placement(c, placement);
      nn::TransformerLM model(c);
      std::mt19937_64 rng = nn::rng_for(s, 0, nn::RngPurpose::probe);
      const nn::Batch probe = corpus.data.batch(nn::Split::validation, 3, 6, rng);
      Tape tape;
      TapeScope scope(tape);
      const Var loss = model.loss(probe.inputs, probe.targets);
      const analysis::PathProfile p = analysis::path_profile(model, loss);
      REQUIRE(rows_of(profile, placement, seed, "0").size() == 3 * (2 * 2 + 1));  // emb, block0, block1; k = 0 .. 2L
      const auto at0 = rows_of(profile, placement, seed, "0", "emb");
      const auto block1 = rows_of(profile, placement, seed, "0", "block1");
      REQUIRE(at0.size() == 2 * 2 + 1);
      for (std::size_t k = 0; k < at0.size(); ++k) {
        REQUIRE(std::stod(at0[k].at("share")) == Approx(p.emb.share[k]).epsilon(1e-8));
        REQUIRE(std::stod(at0[k].at("norm")) == Approx(p.emb.norm[k]).epsilon(1e-8));
        REQUIRE(std::stod(block1[k].at("share")) == Approx(p.blocks[1].share[k]).epsilon(1e-8));
      }
      REQUIRE(std::stod(block1[0].at("mean_length")) == Approx(p.blocks[1].mean_length).epsilon(1e-8));
      REQUIRE(std::stod(at0[0].at("skip_gain")) == Approx(p.skip_gain).epsilon(1e-8));
      REQUIRE(std::stod(at0[0].at("probe_loss")) == Approx(loss.value()()).epsilon(1e-8));
      loss.backward();
      const std::vector<analysis::NormSiteTerms> sites = analysis::norm_site_terms(model);
      const auto norms0 = rows_of(norms, placement, seed, "0");
      REQUIRE(norms0.size() == sites.size());
      for (std::size_t i = 0; i < sites.size(); ++i) {
        REQUIRE(norms0[i].at("site") == sites[i].name);
        REQUIRE(std::stod(norms0[i].at("dx_norm")) == Approx(sites[i].dx).epsilon(1e-8));
        REQUIRE(std::stod(norms0[i].at("center_norm")) == Approx(sites[i].center).epsilon(1e-8));
      }
      std::vector<Array> inputs;
      for (const auto& block : model.blocks)
        inputs.push_back(xt::view(block->last.input.value(), xt::range(0, 1), xt::all(), xt::all()));
      const auto spectra0 = rows_of(spectra, placement, seed, "0");
      REQUIRE(spectra0.size() == 2);
      for (std::size_t l = 0; l < 2; ++l) {
        const analysis::BlockSpectrum b = analysis::block_spectrum(*model.blocks[l], inputs[l]);
        REQUIRE(std::stod(spectra0[l].at("sigma1")) == Approx(b.sigma[0]).epsilon(test::tol(1e-8, 1e-3)));
      }
      // Every step: the shares sum to 1; pre's skip path is the identity; the spectrum is ordered.
      for (const std::string step : {"0", "3"}) {
        INFO("step " << step);
        for (const std::string node : {"emb", "block0", "block1"}) {
          double sum = 0.0;
          for (const auto& row : rows_of(profile, placement, seed, step, node)) sum += std::stod(row.at("share"));
          REQUIRE(sum == Approx(1.0).epsilon(test::tol(1e-8, 1e-6)));
        }
        if (placement == "pre") REQUIRE(rows_of(profile, placement, seed, step)[0].at("skip_gain") == "1");
        for (const auto& row : rows_of(spectra, placement, seed, step)) {
          // float32: the finite-difference JVP's noise keeps Lanczos from converging (docs/precision.md)
          if (!float32_build) REQUIRE(row.at("converged") == "1");
          REQUIRE(std::stod(row.at("sigma1")) >= std::stod(row.at("sigma2")));
          REQUIRE(std::stod(row.at("sigma2")) >= std::stod(row.at("sigma3")));
          REQUIRE(std::stod(row.at("jvp_error")) < test::tol(1e-5, 1e-2));
        }
      }
      // Step 3 is a trained model: its measures moved.
      REQUIRE(rows_of(profile, placement, seed, "3", "emb")[1].at("share") != at0[1].at("share"));
    }
}

TEST_CASE("paths_training: refuses a profile step past --steps", "[experiments][paths]") {
  test::TempDir dir("paths_training_refuse");
  std::vector<std::string> args = tiny;
  args.at(17) = "0,5";  // --profile-steps
  args.insert(args.end(), {"--out", "o"});
  const test::Outcome r = run_binary("paths_training", args, dir.path);
  REQUIRE(r.status != 0);
  REQUIRE_THAT(r.err, Catch::Contains("--profile-steps 5") && Catch::Contains("--steps 3"));
  REQUIRE(!std::filesystem::exists(dir.path / "o"));
}

}  // namespace test_experiments_paths_training
