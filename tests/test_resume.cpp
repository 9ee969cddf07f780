// train --resume continues a run bit for bit: the checkpoint records the run's typed options (its
// "train" object, experiments/train.cpp), a resumed run takes them from it, and a flag that contradicts
// the checkpoint is refused naming the flag and both values.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "io_helpers.hpp"
#include "nn/io/directory_write.hpp"
#include "run_binary.hpp"

namespace test_resume {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::run_binary;
namespace fs = std::filesystem;

namespace {

// A tiny model and a short run (flags that differ from train's defaults, so that a resume that took
// the defaults instead of the checkpoint's flags would not continue the same run).
std::vector<std::string> tiny(std::vector<std::string> more) {
  std::vector<std::string> args = {"--layers", "1", "--d-model", "8", "--heads", "2", "--seq", "8", "--batch", "4",
                                   "--vocab", "8", "--eval-every", "0", "--eval-batches", "2", "--warmup", "5",
                                   "--lr", "0.02", "--clip", "0.5", "--seed", "3"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// The SHA-256 of every parameter and optimizer-state file of a checkpoint (config.json left out).
std::map<std::string, std::string> weights(const fs::path& dir) {
  std::map<std::string, std::string> files = nn::read_manifest(dir).files;
  files.erase("config.json");
  REQUIRE(files.size() > 10);
  return files;
}

std::string final_line(const std::string& out) {
  const std::size_t start = out.find("final: validation loss");
  return out.substr(start, out.find('\n', start) - start);
}

}  // namespace

TEST_CASE("train: 20 steps, save, resume to 40 equals 40 straight steps, for every schedule", "[resume][binaries]") {
  test::TempDir dir("resume-schedules");
  for (const std::string schedule : {"constant", "warmup", "inverse_sqrt", "cosine"}) {
    INFO(schedule);
    const test::Outcome straight = run_binary("train", tiny({"--steps", "40", "--schedule", schedule, "--save", "straight"}), dir.path);
    REQUIRE(straight.status == 0);
    // The first part knows the schedule's length; the resumed part is given nothing but --steps.
    REQUIRE(run_binary("train", tiny({"--steps", "20", "--schedule-steps", "40", "--schedule", schedule, "--save", "half"}),
                       dir.path).status == 0);
    const test::Outcome resumed = run_binary("train", {"--resume", "half", "--steps", "40", "--save", "resumed"}, dir.path);
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    REQUIRE(resumed.out.find("resumed: half at step 20") != std::string::npos);
    REQUIRE(weights(dir.path / "resumed") == weights(dir.path / "straight"));
    REQUIRE(final_line(resumed.out) == final_line(straight.out));
    REQUIRE(nn::read_file(dir.path / "resumed" / "config.json") == nn::read_file(dir.path / "straight" / "config.json"));
  }
}

TEST_CASE("train: 20 steps, save, resume to 40 equals 40 straight steps, for every optimizer, with hold and intervention",
          "[resume][binaries]") {
  test::TempDir dir("resume-optimizers");
  const std::vector<std::vector<std::string>> variants = {
      {"--optimizer", "sgd"}, {"--optimizer", "adam"}, {"--optimizer", "adamw", "--weight-decay", "0.1"},
      {"--optimizer", "radam"},  // its rectification counts steps: the count must come back too
      {"--hold", "5", "--adam-beta2", "0.99"}, {"--intervene", "ln-undo-gain,detach-skip"},
      // GI-Adam's v_0 = g^2 happens at step 1 only: a resumed run must not redo it; qk-norm and z-loss
      {"--adam-v0", "g0sq"}, {"--optimizer", "radam", "--adam-v0", "g0sq"}, {"--qk-norm", "rms", "--z-loss", "0.01"}};
  for (const std::vector<std::string>& variant : variants) {
    std::string name;
    for (const std::string& v : variant) name += v + " ";
    INFO(name);
    std::vector<std::string> straight_flags = {"--steps", "40", "--save", "straight"};
    std::vector<std::string> half_flags = {"--steps", "20", "--schedule-steps", "40", "--save", "half"};
    straight_flags.insert(straight_flags.end(), variant.begin(), variant.end());
    half_flags.insert(half_flags.end(), variant.begin(), variant.end());
    const test::Outcome straight = run_binary("train", tiny(straight_flags), dir.path);
    REQUIRE(straight.status == 0);
    REQUIRE(run_binary("train", tiny(half_flags), dir.path).status == 0);
    const test::Outcome resumed = run_binary("train", {"--resume", "half", "--steps", "40", "--save", "resumed"}, dir.path);
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    REQUIRE(weights(dir.path / "resumed") == weights(dir.path / "straight"));
    REQUIRE(final_line(resumed.out) == final_line(straight.out));
  }
}

TEST_CASE("train --resume: a flag that contradicts the checkpoint is refused naming it and both values; an equal or "
          "harmless one is allowed", "[resume][binaries]") {
  test::TempDir dir("resume-flags");
  REQUIRE(run_binary("train", tiny({"--steps", "4", "--save", "ck"}), dir.path).status == 0);
  auto refused = [&](std::vector<std::string> flags, const std::string& message) {
    flags.insert(flags.begin(), {"--resume", "ck"});
    const test::Outcome r = run_binary("train", flags, dir.path);
    INFO(r.err);
    REQUIRE(r.status == 1);
    REQUIRE(r.err.find("train: error: --resume ck: " + message) == 0);
    REQUIRE(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // refused before any step: no progress line
  };
  refused({"--lr", "0.01"}, "--lr 0.01 contradicts the checkpoint, which was trained with --lr 0.02 (leave --lr out to "
                            "continue with 0.02)");
  refused({"--batch", "8"}, "--batch 8 contradicts the checkpoint, which was trained with --batch 4");
  refused({"--schedule", "constant"}, "--schedule constant contradicts the checkpoint, which was trained with --schedule cosine");
  refused({"--schedule-steps", "9"}, "--schedule-steps 9 contradicts the checkpoint, which was trained with --schedule-steps 4");
  refused({"--optimizer", "adam"}, "--optimizer adam contradicts the checkpoint, which was trained with --optimizer adamw");
  refused({"--weight-decay", "0.1"}, "--weight-decay 0.1 contradicts");
  refused({"--markov-order", "3"}, "--markov-order 3 contradicts");
  refused({"--layers", "2"}, "--layers 2 contradicts the checkpoint, which was trained with --layers 1");
  refused({"--seed", "0"}, "--seed 0 contradicts the checkpoint, which was trained with --seed 3");
  test::overwrite(dir.path / "data.txt", "abcabcabd\n");
  refused({"--text", "data.txt"}, "--text data.txt contradicts the checkpoint, which was trained on the Markov corpus");

  // Equal values (in any spelling), the flags that only extend or print, and outputs are allowed.
  const test::Outcome ok = run_binary("train", {"--resume", "ck", "--steps", "6", "--lr", "2e-2", "--batch", "4", "--layers", "1",
                                                "--placement", "pre/layer/none", "--schedule", "cosine", "--eval-every", "3",
                                                "--out", "o", "--sample", "5"}, dir.path);
  INFO(ok.err);
  REQUIRE(ok.status == 0);
  REQUIRE(ok.out.find("resumed: ck at step 4") != std::string::npos);
  REQUIRE(ok.out.find("note: the cosine schedule ends at step 4") != std::string::npos);
}

TEST_CASE("train --resume of a text file: refused if the file's bytes changed, allowed under another name with the same "
          "bytes", "[resume][binaries]") {
  test::TempDir dir("resume-text");
  test::overwrite(dir.path / "a.txt", std::string(4000, 'a') + std::string(4000, 'b') + "abcdefgh\n");
  REQUIRE(run_binary("train", tiny({"--steps", "3", "--text", "a.txt", "--save", "ck"}), dir.path).status == 0);
  fs::copy_file(dir.path / "a.txt", dir.path / "b.txt");
  const test::Outcome moved = run_binary("train", {"--resume", "ck", "--steps", "4", "--text", "b.txt"}, dir.path);
  INFO(moved.err);
  REQUIRE(moved.status == 0);
  test::overwrite(dir.path / "a.txt", std::string(4000, 'a') + std::string(4000, 'b') + "abcdefgx\n");
  const test::Outcome changed = run_binary("train", {"--resume", "ck", "--steps", "4"}, dir.path);
  REQUIRE(changed.status == 1);
  REQUIRE(changed.err.find("train: error: --resume ck: --text a.txt has SHA-256 ") == 0);
  REQUIRE(changed.err.find("the checkpoint was trained on a.txt with SHA-256 ") != std::string::npos);
}

}  // namespace test_resume
