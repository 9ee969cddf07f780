// SIGINT and SIGTERM stop a training binary at the next step boundary (experiments/lib/interrupt.hpp):
// one line saying where, exit 130 / 143, no partial output and no temporary files; train saves the
// checkpoint of the last finished step, from which --resume alone continues the run bit for bit.
// Each binary stops itself at a step boundary (GRADSCOPE_TEST_PAUSE_AT=step.N), where the test sends it
// the signal: a real signal to a real process.
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "io_helpers.hpp"
#include "nn/io/checkpoint.hpp"
#include "nn/io/directory_write.hpp"
#include "run_binary.hpp"

namespace test_signals {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::run_binary;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> tiny = {"--layers", "1", "--d-model", "8", "--heads", "2", "--seq", "8", "--batch", "4",
                                       "--vocab", "8", "--eval-every", "0", "--eval-batches", "2", "--warmup", "5"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

TEST_CASE("train: SIGINT at step 20 saves step 20 and exits 130; --resume alone then ends as the run never stopped",
          "[signals][binaries]") {
  test::TempDir dir("signals-train");
  const test::Outcome straight = run_binary("train", with(tiny, {"--steps", "40", "--save", "straight", "--out", "o1"}), dir.path);
  REQUIRE(straight.status == 0);

  const test::Outcome stopped = run_binary("train", with(tiny, {"--steps", "40", "--save", "ck", "--out", "o2"}), dir.path,
                                           "step.20", SIGINT);
  INFO(stopped.out << stopped.err);
  REQUIRE(stopped.status == 130);
  REQUIRE(test::last_line(stopped.err) == "train: interrupted by SIGINT at step 20 of 40; saved the checkpoint of step 20 to ck (continue: "
                         "train --resume ck)\n");
  REQUIRE(nn::read_checkpoint_info(dir.path / "ck").step == 20);
  REQUIRE(test::leftovers(dir.path).empty());
  const std::string rows = nn::read_file(dir.path / "o2" / "train.csv");
  REQUIRE(std::count(rows.begin(), rows.end(), '\n') == 21);  // the header and steps 1 .. 20

  const test::Outcome resumed = run_binary("train", {"--resume", "ck", "--save", "ck", "--out", "o2"}, dir.path);
  INFO(resumed.err);
  REQUIRE(resumed.status == 0);
  std::map<std::string, std::string> a = nn::read_manifest(dir.path / "ck").files, b = nn::read_manifest(dir.path / "straight").files;
  REQUIRE(a == b);  // every parameter, every optimizer moment, and config.json
  auto without_speed = [](const std::string& csv) {  // the last column, tokens_per_s, is a timing
    std::string kept, line;
    std::stringstream lines(csv);
    while (std::getline(lines, line)) kept += line.substr(0, line.rfind(',')) + "\n";
    return kept;
  };
  const std::string resumed_rows = without_speed(nn::read_file(dir.path / "o2" / "train.csv"));
  REQUIRE(std::count(resumed_rows.begin(), resumed_rows.end(), '\n') == 41);
  REQUIRE(resumed_rows == without_speed(nn::read_file(dir.path / "o1" / "train.csv")));
}

TEST_CASE("train: SIGTERM exits 143 at the step boundary, and without --save leaves nothing behind", "[signals][binaries]") {
  test::TempDir dir("signals-term");
  const test::Outcome stopped = run_binary("train", with(tiny, {"--steps", "30", "--dump", "d"}), dir.path, "step.7", SIGTERM);
  INFO(stopped.out << stopped.err);
  REQUIRE(stopped.status == 143);
  REQUIRE(test::last_line(stopped.err) == "train: interrupted by SIGTERM at step 7 of 30\n");
  REQUIRE(stopped.out.find("at the stop: validation loss") != std::string::npos);
  REQUIRE(test::leftovers(dir.path).empty());
  REQUIRE(nn::read_manifest(dir.path / "d").tag.kind == "dump");  // the dump of step 7, written whole
}

TEST_CASE("the grid binaries: SIGINT or SIGTERM inside a cell exits 130 / 143 and writes no tables or files of the grid",
          "[signals][binaries]") {
  test::TempDir dir("signals-grid");
  struct Case {
    std::string binary;
    std::vector<std::string> flags;
    int signal;
  };
  for (const Case& c : std::vector<Case>{
           {"warmup", {"--steps", "6", "--window", "2", "--eval-batches", "1", "--datasets", "markov", "--lrs", "0.01",
                       "--placements", "post,pre", "--warmups", "0"}, SIGINT},
           {"dynamics", {"--steps", "6", "--early", "2", "--eval-batches", "1", "--warmups", "0"}, SIGTERM},
           {"stream", {"--layers-list", "1", "--placements", "pre", "--steps", "6"}, SIGINT}}) {
    INFO(c.binary);
    std::vector<std::string> args = {"--out", "o"};
    for (std::string f : {"--d-model", "8", "--heads", "2", "--seq", "6", "--batch", "3", "--seeds", "1", "--jobs", "1"})
      args.push_back(f);
    if (c.binary != "stream") args.insert(args.end(), {"--layers", "2"});
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    fs::remove_all(dir.path / "o");
    const test::Outcome stopped = run_binary(c.binary, args, dir.path, "step.3", c.signal);
    INFO(stopped.out << stopped.err);
    REQUIRE(stopped.status == 128 + c.signal);
    const std::string line = test::last_line(stopped.err);
    REQUIRE(line.rfind(c.binary + ": interrupted by " + (c.signal == SIGINT ? "SIGINT" : "SIGTERM") + " at step 3 of cell ",
                              0) == 0);
    REQUIRE(line.find("; no tables or files of the grid written\n") != std::string::npos);
    REQUIRE(test::leftovers(dir.path).empty());
    for (const fs::directory_entry& e : fs::directory_iterator(dir.path / "o")) {
      INFO(e.path());
      REQUIRE(e.path().filename() == nn::manifest_name);  // the claimed --out, and nothing in it
    }
  }
}

}  // namespace test_signals
