// dynamics' early window: a tiny run prints the early-window table after the link tables, writes
// early_window.csv, and ends steps.csv with the new columns, whose numbers agree with each other and
// with the table (recomputed here from steps.csv).
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "check.hpp"
#include "io_helpers.hpp"
#include "run_binary.hpp"

namespace test_experiments_dynamics {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::run_binary;
namespace fs = std::filesystem;

namespace {

// The cells of one CSV line (a quoted cell may hold commas).
std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) cells.emplace_back();
    else cells.back() += c;
  }
  return cells;
}

// A CSV file as rows of named cells.
std::vector<std::map<std::string, std::string>> read_csv(const fs::path& p) {
  std::stringstream lines(gs::nn::read_file(p));
  std::string line;
  std::getline(lines, line);
  const std::vector<std::string> header = cells_of(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(lines, line)) {
    const std::vector<std::string> cells = cells_of(line);
    REQUIRE(cells.size() == header.size());
    std::map<std::string, std::string>& row = rows.emplace_back();
    for (std::size_t i = 0; i < cells.size(); ++i) row[header[i]] = cells[i];
  }
  return rows;
}

}  // namespace

TEST_CASE("dynamics' early window: the table, early_window.csv and the new steps.csv columns agree",
          "[experiments][dynamics]") {
  test::TempDir dir("dynamics_early");
  const test::Outcome r = run_binary("dynamics", {"--d-model", "8", "--heads", "2", "--seq", "6", "--batch", "3",
                                                  "--seeds", "2", "--layers", "2", "--steps", "5", "--early", "2",
                                                  "--early-window", "4", "--eval-batches", "1", "--warmups", "0,2",
                                                  "--placements", "post,pre", "--out", "o"},
                                     dir.path);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  const std::size_t table = r.out.find("\nearly window, steps 1-4, mean over the seeds");
  REQUIRE(table != std::string::npos);
  REQUIRE(table > r.out.find("link 4, stuck near the uniform loss"));  // after the link tables
  std::vector<std::string> printed;  // the steps of post, warmup 2's rows: 1, 2, 3, 5, ... up to 4, and 4
  std::stringstream lines(r.out.substr(table));
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("post, warmup 2 ", 0) == 0) {
      std::stringstream words(line.substr(14));  // after the run label: the step
      words >> printed.emplace_back();
    }
  REQUIRE(printed == std::vector<std::string>{"1", "2", "3", "4"});
  const auto early = read_csv(dir.path / "o" / "early_window.csv");
  REQUIRE(early.size() == 4 * 4);  // 4 runs x steps 1..4
  const auto steps = read_csv(dir.path / "o" / "steps.csv");
  REQUIRE(steps.size() == 4 * 2 * 5);  // 4 runs x 2 seeds x 5 steps
  std::map<std::string, double> ratio_sum, share_at_1;
  for (const auto& s : steps) {
    INFO(s.at("placement") << " warmup " << s.at("warmup") << " seed " << s.at("seed") << " step " << s.at("step"));
    const double change = std::stod(s.at("loss_change")), linear = std::stod(s.at("loss_linear"));
    REQUIRE(std::stod(s.at("loss_ratio")) == Approx(change / linear).epsilon(1e-5));
    const double share = std::stod(s.at("token_share"));
    REQUIRE(share >= 0.0);
    REQUIRE(share <= 1.0);
    for (const char* g : {"b0.attn", "b0.mlp", "b1.attn", "b1.mlp"}) REQUIRE(std::stod(s.at(std::string("spectral_ratio_") + g)) > 0.0);
    const std::string run = s.at("placement") + ", warmup " + s.at("warmup");
    if (s.at("step") == "2") ratio_sum[run] += std::stod(s.at("loss_ratio")) / 2;
    // Before update 1 every run of a placement and seed is the same initial model on the same probe batch.
    if (s.at("step") == "1") {
      const std::string key = s.at("placement") + " seed " + s.at("seed");
      if (share_at_1.count(key)) REQUIRE(share_at_1[key] == share);
      share_at_1[key] = share;
    }
  }
  REQUIRE(ratio_sum.size() == 4);
  for (const auto& e : early)
    if (e.at("step") == "2") {
      INFO(e.at("run"));
      REQUIRE(std::stod(e.at("dL/lin")) == Approx(ratio_sum.at(e.at("run"))).epsilon(5e-3));  // 3 digits
    }
}

}  // namespace test_experiments_dynamics
