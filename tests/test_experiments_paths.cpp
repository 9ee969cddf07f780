// paths: a tiny run's CSV files hold analysis::path_profile's and norm_site_terms' numbers for the
// model and batch of each cell (recomputed here), the shares of every node sum to 1, Pre-LN's skip gain
// is exactly 1, and every LayerNorm site has its row.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "check.hpp"
#include "csv_reader.hpp"
#include "io_helpers.hpp"
#include "run_binary.hpp"
#include "analysis/ln_terms.hpp"
#include "analysis/paths.hpp"
#include "analysis/probe.hpp"
#include "engine/engine.hpp"
#include "nn/transformer_lm.hpp"

namespace test_experiments_paths {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::read_csv;
using test::run_binary;

TEST_CASE("paths: summary.csv, profile.csv and ln_terms.csv hold the measures of each cell's model",
          "[experiments][paths]") {
  test::TempDir dir("paths_csv");
  const test::Outcome r = run_binary("paths", {"--d-model", "8", "--heads", "2", "--seq", "6", "--batch", "3",
                                               "--seeds", "2", "--layers-list", "1,3", "--placements", "post,pre",
                                               "--out", "o"},
                                     dir.path);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  const auto summary = read_csv(dir.path / "o" / "summary.csv");
  REQUIRE(summary.size() == 2 * 2 * 2);  // placements x depths x seeds
  for (const auto& row : summary) {
    INFO(row.at("placement") << " L=" << row.at("layers") << " seed " << row.at("seed"));
    // The cell's model and batch, as the binary makes them (ModelOptions::config, gradflow's batch).
    nn::ModelConfig c{.vocab = 64, .context = 6, .d_model = 8, .heads = 2,
                      .layers = std::stoul(row.at("layers")), .seed = static_cast<unsigned>(std::stoul(row.at("seed")))};
    nn::apply_placement(c, row.at("placement"));
    nn::TransformerLM model(c);
    const nn::Batch b = analysis::MarkovBatches(64, 3, 6, c.seed).batch(0);
    Tape tape;
    TapeScope scope(tape);
    const Var loss = model.loss(b.inputs, b.targets);
    const analysis::PathProfile p = analysis::path_profile(model, loss);
    REQUIRE(std::stod(row.at("skip_gain")) == Approx(p.skip_gain).epsilon(1e-8));
    REQUIRE(std::stod(row.at("emb_mean_length")) == Approx(p.emb.mean_length).epsilon(1e-8));
    REQUIRE(std::stod(row.at("block0_overlap")) == Approx(p.blocks[0].overlap).epsilon(1e-8));
    if (row.at("placement") == "pre") REQUIRE(row.at("skip_gain") == "1");
    else REQUIRE(std::stod(row.at("skip_gain")) < 0.9);
    loss.backward();
    const std::vector<analysis::NormSiteTerms> sites = analysis::norm_site_terms(model);
    std::vector<std::map<std::string, std::string>> rows;
    for (const auto& ln : read_csv(dir.path / "o" / "ln_terms.csv"))
      if (ln.at("placement") == row.at("placement") && ln.at("layers") == row.at("layers") && ln.at("seed") == row.at("seed"))
        rows.push_back(ln);
    REQUIRE(rows.size() == sites.size());
    REQUIRE(sites.size() == 2 * c.layers + (row.at("placement") == "pre" ? 1 : 0));  // pre's ln_f
    for (std::size_t i = 0; i < sites.size(); ++i) {
      REQUIRE(rows[i].at("site") == sites[i].name);
      REQUIRE(std::stod(rows[i].at("radial_norm")) == Approx(sites[i].radial).epsilon(1e-8));
      REQUIRE(std::stod(rows[i].at("dx_norm")) == Approx(sites[i].dx).epsilon(1e-8));
    }
  }
  // Per (placement, layers, node): 2L + 1 rows whose mean shares sum to 1.
  std::map<std::string, std::pair<std::size_t, double>> nodes;  // key -> (rows, sum of share_mean)
  for (const auto& row : read_csv(dir.path / "o" / "profile.csv")) {
    auto& n = nodes[row.at("placement") + " L=" + row.at("layers") + " " + row.at("node")];
    ++n.first;
    n.second += std::stod(row.at("share_mean"));
  }
  REQUIRE(nodes.size() == 2 * (2 + 4));  // emb and each block, at L = 1 and 3
  for (const auto& [key, n] : nodes) {
    INFO(key);
    const std::size_t L = key.find("L=1 ") != std::string::npos ? 1 : 3;
    REQUIRE(n.first == 2 * L + 1);
    REQUIRE(n.second == Approx(1.0).epsilon(test::tol(1e-8, 1e-3)));
  }
}

}  // namespace test_experiments_paths
