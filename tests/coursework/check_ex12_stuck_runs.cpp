// The check of exercise 12, for the student: scripts/exercise 12 (docs/coursework.md#ex12)
#include <cstdio>
#include <string>

#include "ex12_stuck_runs.hpp"
#include "exercise.hpp"
#include "small_grid.hpp"

namespace check_ex12_stuck_runs {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::coursework;

EXERCISE_CASE("ex12", "stuck runs: your predictions match the small warmup grid, run by run") {
  const std::string path = answers_dir() + "/" + kStuckRunsFile;
  const auto predictions = read_predictions(path);
  std::string table = "placement  warmup  lr     final loss  verdict   predicted\n", wrong, unanswered;
  int runs = 0;
  for (const char* placement : {"post", "pre"})
    for (std::size_t warmup : {0, 50})
      for (const char* lr : {"0.003", "0.01", "0.03"}) {
        const std::string key = std::string(placement) + " " + std::to_string(warmup) + " " + lr;
        const auto p = predictions.find(key);
        if (p == predictions.end() || (p->second != "0" && p->second != "1")) {
          unanswered += "  " + key + (p == predictions.end() ? " (no line)" : " (" + p->second + ")") + "\n";
          continue;
        }
        const SmallRun r = small_run(placement, std::stod(lr), warmup, 0);
        const bool stuck = r.verdict == experiments::Verdict::stuck;
        char line[128];
        std::snprintf(line, sizeof line, "%-9s  %-6zu  %-5s  %-10.4f  %-8s  %s\n", placement, warmup, lr, r.final_loss,
                      experiments::to_string(r.verdict).c_str(), p->second == "1" ? "stuck" : "not stuck");
        table += line;
        if ((p->second == "1") != stuck) wrong += (wrong.empty() ? "" : ", ") + key;
        ++runs;
      }
  if (!unanswered.empty())
    FAIL("not answered yet: " + path + " has no 0 or 1 for\n" + unanswered + "see docs/coursework.md#ex12");
  INFO("predicted wrong: " << (wrong.empty() ? "none" : wrong));
  INFO("the grid (" << runs << " runs):\n" << table);
  REQUIRE(wrong.empty());
}

}  // namespace check_ex12_stuck_runs
