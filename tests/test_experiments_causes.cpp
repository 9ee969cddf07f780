// causes' grafts and transplants: a graft at step 0 takes the donor's initial state, which is the
// recipient's own (same seed), so it must change nothing; a graft at a later step must change the run.
// Each row's final loss is read back from runs.csv.
#include <map>
#include <string>
#include <vector>

#include "check.hpp"
#include "csv_reader.hpp"
#include "io_helpers.hpp"
#include "run_binary.hpp"

namespace test_experiments_causes {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::run_binary;

namespace {

// causes on a tiny model for `rows`, with every graft at `step`: row name -> its final held-out loss (one seed).
std::map<std::string, std::string> final_losses(const std::string& rows, const std::string& step) {
  test::TempDir dir("causes_grafts");
  const test::Outcome r = run_binary("causes", {"--d-model", "8", "--heads", "2", "--seq", "6", "--batch", "3", "--seeds",
                                                "1", "--jobs", "1", "--layers", "2", "--steps", "6", "--window", "2",
                                                "--eval-batches", "1", "--group-warmup", "3", "--reset-step", step,
                                                "--collapse-step", "1", "--placements", "post", "--rows", rows, "--out", "o"},
                                     dir.path);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  std::map<std::string, std::string> loss;
  for (const auto& row : test::read_csv(dir.path / "o" / "runs.csv")) loss[row.at("change")] = row.at("final_loss");
  return loss;
}

}  // namespace

TEST_CASE("causes: a graft or transplant at step 0 is the recipient's own run; at step 2 it changes it",
          "[experiments][causes]") {
  const std::string healthy = "warmup 3: blocks";
  const std::vector<std::string> to_stuck = {"graft blocks at ", "to stuck: healthy blocks at ",
                                             "to stuck: healthy fc1+fc2 at ", "to stuck: healthy adam at "};
  const std::vector<std::string> to_healthy = {"to healthy: stuck qk at ", "to healthy: stuck norms at ",
                                               "to healthy: stuck adam at "};
  for (const std::string step : {"0", "2"}) {
    std::string rows = "none," + healthy;
    for (const auto& list : {to_stuck, to_healthy})
      for (const std::string& r : list) rows += "," + r + step;
    const std::map<std::string, std::string> loss = final_losses(rows, step);
    INFO("graft step " << step);
    for (const std::string& r : to_stuck) {
      INFO(r);
      CHECK((loss.at(r + step) == loss.at("none")) == (step == "0"));
    }
    for (const std::string& r : to_healthy) {
      INFO(r);
      // Adam's moments after 2 steps differ between the runs unless nothing reached them: the
      // step-2 transplant of a part or of the moments changes the healthy run
      CHECK((loss.at(r + step) == loss.at(healthy)) == (step == "0"));
    }
  }
}

TEST_CASE("causes: the collapse table gives every row, and measures each run's predictions", "[experiments][causes]") {
  test::TempDir dir("causes_collapse");
  const test::Outcome r = run_binary("causes", {"--d-model", "8", "--heads", "2", "--seq", "6", "--batch", "3", "--seeds",
                                                "2", "--jobs", "1", "--layers", "2", "--steps", "4", "--window", "2",
                                                "--eval-batches", "1", "--reset-step", "2", "--collapse-step", "1",
                                                "--placements", "post,pre", "--rows", "none,frozen blocks", "--out", "o"},
                                     dir.path);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("top cos 1") && Catch::Contains("top cos 2") && Catch::Contains("KL(u, head)"));
  const auto collapse = test::read_csv(dir.path / "o" / "collapse.csv");
  REQUIRE(collapse.size() == 4);  // 2 placements x 2 rows
  for (const auto& row : test::read_csv(dir.path / "o" / "runs.csv")) {
    INFO(row.at("placement") << " " << row.at("change"));
    const double h = std::stod(row.at("head_entropy_end")), kl = std::stod(row.at("unigram_kl_end"));
    const double cos = std::stod(row.at("top_cos_end")), dead = std::stod(row.at("dead_end"));
    CHECK(h > 0);
    CHECK(h <= std::log(16.0) + 1e-12);  // the entropy of a distribution over vocab 16 is at most log 16
    CHECK(kl >= -1e-12);
    CHECK(cos >= -1.0);
    CHECK(cos <= 1.0 + 1e-12);
    CHECK(dead >= 0.0);
    CHECK(dead <= 1.0);
  }
}

}  // namespace test_experiments_causes
