// dynamics' early window: a tiny run prints the early-window table after the link tables, writes
// early_window.csv, and ends steps.csv with the new columns, whose numbers agree with each other and
// with the table (recomputed here from steps.csv). Its collapse measures: the table, steps.csv and the
// explorer page's charts hold block_collapse's numbers of the first pass, recomputed here.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "check.hpp"
#include "csv_reader.hpp"
#include "io_helpers.hpp"
#include "run_binary.hpp"
#include "analysis/collapse.hpp"
#include "engine/engine.hpp"
#include "experiments/lib/flags.hpp"
#include "explorer/page.hpp"
#include "nn/data/corpus.hpp"
#include "nn/train.hpp"

namespace test_experiments_dynamics {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::read_csv;
using test::run_binary;
namespace fs = std::filesystem;

namespace {

// The cells of a printed table's line (separated by two spaces or more).
std::vector<std::string> table_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::size_t at = 0;
  while (at < line.size()) {
    const std::size_t gap = line.find("  ", at);
    cells.push_back(line.substr(at, gap - at));
    if (gap == std::string::npos) break;
    at = line.find_first_not_of(' ', gap);
  }
  return cells;
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
  const std::size_t next = r.out.find("\ncollapse of the positions", table);  // the table after it
  REQUIRE(next != std::string::npos);
  std::vector<std::string> printed;  // the steps of post, warmup 2's rows: 1, 2, 3, 5, ... up to 4, and 4
  std::stringstream lines(r.out.substr(table, next - table));
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

TEST_CASE("dynamics' collapse measures: the table, steps.csv and the page's charts hold block_collapse's numbers "
          "of the first pass", "[experiments][dynamics][collapse]") {
  test::TempDir dir("dynamics_collapse");
  const test::Outcome r = run_binary("dynamics", {"--d-model", "8", "--heads", "2", "--seq", "6", "--batch", "3",
                                                  "--seeds", "1", "--layers", "2", "--steps", "6", "--early", "2",
                                                  "--early-window", "3", "--eval-batches", "1", "--warmups", "0",
                                                  "--placements", "post,rezero", "--out", "o", "--html", "page.html"},
                                     dir.path);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  const std::size_t table = r.out.find("\ncollapse of the positions");
  REQUIRE(table != std::string::npos);
  REQUIRE(table > r.out.find("\nearly window, steps 1-3"));
  const auto steps = read_csv(dir.path / "o" / "steps.csv");
  const explorer::Page page = explorer::read_explorer_page(dir.path / "page.html");
  for (const std::string placement : {"post", "rezero"}) {
    CAPTURE(placement);
    // The first pass of the run, here: dynamics' model at init on the training batch of step 0.
    experiments::ModelOptions m = experiments::stability_model();
    m.d_model = 8, m.heads = 2, m.seq = 6, m.batch = 3, m.layers = 2, m.placement = placement;
    const nn::Corpus corpus = nn::build_corpus({}, m.vocab, m.seed, m.seq);
    m.vocab = corpus.data.vocab();
    nn::TransformerLM model(m.config());
    Tape tape;
    TapeScope scope(tape);
    const nn::Batch batch = nn::training_batch(corpus.data, m.batch, m.seq, m.seed, 0);
    model.loss(batch.inputs, batch.targets);
    const std::vector<analysis::BlockCollapse> c = analysis::block_collapse(model);
    REQUIRE(c.size() == 2);

    // steps.csv: a column per block, the first step's the numbers of that pass (7 digits).
    const auto first = [&] {
      for (const auto& s : steps)
        if (s.at("placement") == placement && s.at("step") == "1") return s;
      FAIL("no step 1 of " << placement << " in steps.csv");
      return steps.front();
    }();
    const auto csv = [&](const std::string& column) { return std::stod(first.at(column)); };
    for (std::size_t i = 0; i < 2; ++i) {
      const std::string b = "_b" + std::to_string(i);
      CAPTURE(i);
      CHECK(csv("out_cosine" + b) == Approx(c[i].out_cosine).epsilon(1e-6));
      CHECK(csv("out_top_share" + b) == Approx(c[i].out_top_share).epsilon(1e-6));  // step 1: in the early window
      CHECK(csv("dead_units" + b) == Approx(c[i].dead_units).epsilon(1e-6));
      CHECK(csv("att_entropy_share" + b) == Approx(c[i].entropy_share).epsilon(1e-6));
      CHECK(csv("mlp_branch_skip" + b) == Approx(c[i].mlp_branch_to_skip).epsilon(1e-6));
      if (placement == "rezero") {  // a = 0 at init: no branch, so no shared share
        CHECK(std::isnan(csv("attn_shared" + b)));
        CHECK(c[i].attn_branch_to_skip == 0.0);
      } else {
        CHECK(csv("attn_shared" + b) == Approx(c[i].attn_shared_share).epsilon(1e-6));
      }
    }
    // Step 4 is past the early window (3) and not a tenth step or one of the table's: no top share.
    for (const auto& s : steps)
      if (s.at("placement") == placement && s.at("step") == "4") CHECK(std::isnan(std::stod(s.at("out_top_share_b1"))));

    // The table's step-1 row: the top block (here block 1), its entropy share, dead units over the blocks.
    std::stringstream lines(r.out.substr(table));
    std::vector<std::string> row;
    for (std::string line; std::getline(lines, line);)
      if (line.rfind(placement + ", warmup 0 ", 0) == 0 && table_cells(line).at(1) == "1") row = table_cells(line);
    REQUIRE(row.size() == 9);  // run, step, cos top, cos b1, top dir top, H share top, dead units, attn/skip, mlp/skip
    CHECK(std::stod(row[2]) == Approx(c[1].out_cosine).epsilon(5e-3));
    CHECK(std::stod(row[3]) == Approx(c[1].out_cosine).epsilon(5e-3));
    CHECK(std::stod(row[4]) == Approx(c[1].out_top_share).epsilon(5e-3));
    CHECK(std::stod(row[5]) == Approx(c[1].entropy_share).epsilon(5e-3));
    CHECK(std::stod(row[6]) == Approx((c[0].dead_units + c[1].dead_units) / 2).epsilon(5e-3).margin(1e-12));
    CHECK(std::stod(row[7]) == Approx((c[0].attn_branch_to_skip + c[1].attn_branch_to_skip) / 2).epsilon(5e-3));

    // The page: the run's collapse charts, a series per block over every step, step 0 that pass's numbers
    // (5 digits) and every step steps.csv's.
    const explorer::Run* run = nullptr;
    for (const explorer::Run& x : page.runs)
      if (x.name == placement + ", warmup 0, seed 0") run = &x;
    REQUIRE(run != nullptr);
    for (const std::string chart : {"out_cosine", "dead_units", "att_entropy_share"}) {
      CAPTURE(chart);
      CHECK(std::any_of(run->charts.begin(), run->charts.end(), [&](const explorer::Chart& x) { return x.id == chart; }));
      for (std::size_t i = 0; i < 2; ++i) {
        CAPTURE(i);
        const explorer::StepSeries* series = nullptr;
        for (const explorer::StepSeries& s : run->series)
          if (s.chart == chart && s.name == "blocks." + std::to_string(i)) series = &s;
        REQUIRE(series != nullptr);
        REQUIRE(series->steps == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});
        const double expected = chart == "out_cosine" ? c[i].out_cosine
                                : chart == "dead_units" ? c[i].dead_units : c[i].entropy_share;
        CHECK(series->values[0] == Approx(expected).epsilon(1e-4));
        for (const auto& s : steps)
          if (s.at("placement") == placement) {
            const std::size_t t = std::stoul(s.at("step"));
            CHECK(series->values.at(t - 1) == Approx(std::stod(s.at(chart + "_b" + std::to_string(i)))).epsilon(1e-4));
          }
      }
    }
  }
}

}  // namespace test_experiments_dynamics
