// What docs/reliability.md promises between processes, in every phase of a run, and for numbers that
// parse but mean nothing: one writer per output (a second run is refused naming the first, a stale lock
// is taken over), SIGINT/SIGTERM while sampling, measuring, drawing and in
// the explorer, and the silent-nonsense flags refused before any work. Real binaries, tiny sizes.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/lib/grid.hpp"
#include "experiments/lib/shard.hpp"
#include "io_helpers.hpp"
#include "nn/io/checkpoint.hpp"
#include "nn/io/npy.hpp"
#include "nn/io/directory_write.hpp"
#include "run_binary.hpp"

namespace test_reliability {  // one namespace per test file: the files compile in groups

using namespace gs;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using test::run_binary;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> tiny = {"--layers", "1", "--d-model", "8", "--heads", "2", "--seq", "8", "--batch", "4",
                                       "--vocab", "8", "--eval-every", "0", "--eval-batches", "2", "--warmup", "2"};
const std::vector<std::string> tiny_grid = {"--d-model", "8", "--heads", "2", "--seq", "6", "--batch", "3", "--seeds", "1",
                                            "--jobs", "1"};

const std::string explorer = GRADSCOPE_EXPLORER_BINARY;  // built apart from the experiments

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// A binary started in `cwd` that stops itself at `pause_at`; its pid once it has stopped.
pid_t start_paused(const std::string& name, const std::vector<std::string>& args, const fs::path& cwd,
                   const char* pause_at) {
  return test::start_binary(name, args, cwd, pause_at);
}

// Continues a process start_paused stopped (again each time it stops at the pause point, which a grid
// reaches once per cell) and returns its exit code.
int resume_and_wait(pid_t pid) {
  int status = 0;
  do {
    REQUIRE(::kill(pid, SIGCONT) == 0);
    REQUIRE(::waitpid(pid, &status, WUNTRACED) == pid);
  } while (WIFSTOPPED(status));
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool any_tmp_file(const fs::path& dir) {
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp") != std::string::npos) return true;
  return false;
}

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

// ---- one writer per output ----

TEST_CASE("two runs on one output: the second is refused at start naming the first, which completes; nothing is lost",
          "[reliability][lock][binaries]") {
  test::TempDir dir("lock-two");
  fs::create_directories(dir.path / "a");
  fs::create_directories(dir.path / "b");

  // Two grids on one --out.
  const std::vector<std::string> grid = with(tiny_grid, {"--layers", "2", "--steps", "4", "--window", "2", "--eval-batches",
                                                         "1", "--datasets", "markov", "--placements", "pre", "--warmups", "0",
                                                         "--out", "../o"});
  const pid_t first = start_paused("warmup", with(grid, {"--lrs", "0.01"}), dir.path / "a", "step.2");
  const test::Outcome second = run_binary("warmup", with(grid, {"--lrs", "0.02"}), dir.path / "b");
  INFO(second.err);
  CHECK(second.status == 1);
  CHECK(lines(second.err) == 1);
  CHECK_THAT(second.err, Contains("--out ../o: another run is writing it: gradscope warmup, pid " + std::to_string(first)));
  REQUIRE(resume_and_wait(first) == 0);
  const std::string runs = nn::read_file(dir.path / "o" / "runs.csv");
  CHECK_THAT(runs, Contains("0.01"));  // the first grid's results, whole
  CHECK_FALSE(fs::exists(dir.path / "o.lock"));  // removed at the end of the run

  // Two trainings saving one checkpoint: the one that ran keeps it, with its own seed.
  const pid_t saver = start_paused("train", with(tiny, {"--steps", "4", "--seed", "1", "--save", "../cc"}), dir.path / "a",
                                   "step.2");
  const test::Outcome other = run_binary("train", with(tiny, {"--steps", "4", "--seed", "2", "--save", "../cc"}), dir.path / "b");
  CHECK(other.status == 1);
  CHECK_THAT(other.err, Contains("--save ../cc: another run is writing it: gradscope train, pid " + std::to_string(saver)));
  REQUIRE(resume_and_wait(saver) == 0);
  CHECK(nn::read_checkpoint_info(dir.path / "cc").config.seed == 1);
}

TEST_CASE("two runs on one single-file output (--html, --graph): the second is refused naming the first",
          "[reliability][lock][binaries]") {
  test::TempDir dir("lock-file");
  fs::create_directories(dir.path / "a");
  fs::create_directories(dir.path / "b");

  // Two trainings writing one explorer page: the first, paused mid-run, keeps it.
  const pid_t first = start_paused("train", with(tiny, {"--steps", "4", "--html", "../p.html"}), dir.path / "a", "step.2");
  const test::Outcome second = run_binary("train", with(tiny, {"--steps", "4", "--html", "../p.html"}), dir.path / "b");
  INFO(second.err);
  CHECK(second.status == 1);
  CHECK(lines(second.err) == 1);
  CHECK_THAT(second.err, Contains("--html ../p.html: another run is writing it: gradscope train, pid " + std::to_string(first)));
  CHECK_FALSE(fs::exists(dir.path / "p.html"));  // the second wrote nothing
  REQUIRE(resume_and_wait(first) == 0);
  CHECK(fs::exists(dir.path / "p.html"));
  CHECK_FALSE(fs::exists(dir.path / "p.html.lock"));  // removed at the end of the run

  // A drawing: this test holds g.dot's lock as a running `train --graph g.dot` would.
  const fs::path lock = dir.path / "g.dot.lock";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  const std::string holder = std::to_string(::getpid()) + " train\n";
  REQUIRE(::write(fd, holder.data(), holder.size()) == static_cast<ssize_t>(holder.size()));
  const test::Outcome drawn = run_binary("train", with(tiny, {"--graph", "g.dot"}), dir.path);
  ::close(fd);
  INFO(drawn.err);
  CHECK(drawn.status == 1);
  CHECK_THAT(drawn.err, Contains("--graph g.dot: another run is writing it: gradscope train, pid " + std::to_string(::getpid())));
  CHECK_FALSE(fs::exists(dir.path / "g.dot"));
  // Once the holder is gone the same command draws.
  fs::remove(lock);
  const test::Outcome again = run_binary("train", with(tiny, {"--graph", "g.dot"}), dir.path);
  INFO(again.err);
  CHECK(again.status == 0);
  CHECK(fs::exists(dir.path / "g.dot"));
}

TEST_CASE("a lock left by a process that ended is taken over with a note", "[reliability][lock][binaries]") {
  test::TempDir dir("lock-stale");
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(gone, &status, 0) == gone);  // a pid that is certainly not running now
  test::overwrite(dir.path / "o.lock", std::to_string(gone) + " train\n");
  const test::Outcome r = run_binary("train", with(tiny, {"--steps", "2", "--out", "o"}), dir.path);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Contains("note: --out o: took over the lock of gradscope train, pid " + std::to_string(gone) +
                             ", which ended without removing it"));
  CHECK_FALSE(fs::exists(dir.path / "o.lock"));
}

// ---- signals in every phase ----

TEST_CASE("train: SIGINT while sampling stops the sample, prints none of it, and says the training is kept",
          "[reliability][signals][binaries]") {
  test::TempDir dir("sig-sample");
  const test::Outcome r =
      run_binary("train", with(tiny, {"--steps", "2", "--save", "ck", "--sample", "10000000"}), dir.path, "sampling", SIGINT);
  INFO(r.out << r.err);
  CHECK(r.status == 130);
  CHECK_THAT(test::last_line(r.err), StartsWith("train: interrupted by SIGINT while sampling, after 0 of 10000000 "
                                                "characters; the training finished and its outputs are written"));
  CHECK(r.out.find("sample:") == std::string::npos);
  CHECK(nn::read_checkpoint_info(dir.path / "ck").step == 2);
}

TEST_CASE("amplification: SIGTERM in its measurement loop exits 143 with no files of the grid",
          "[reliability][signals][binaries]") {
  test::TempDir dir("sig-amplification");
  const test::Outcome r = run_binary("amplification", with(tiny_grid, {"--depths", "1,2", "--placements", "pre", "--batches",
                                                                       "100000000", "--out", "o"}),
                                     dir.path, "step.1", SIGTERM);
  INFO(r.err);
  CHECK(r.status == 143);
  CHECK_THAT(test::last_line(r.err), StartsWith("amplification: interrupted by SIGTERM at step 1 of cell ") &&
                                         Contains("; no tables or files of the grid written"));
  CHECK(names_in(dir.path / "o") == std::vector<std::string>{nn::manifest_name});
}

TEST_CASE("an interrupted plot: no .tmp file, the folder marked INCOMPLETE until a run completes",
          "[reliability][signals][binaries]") {
  test::TempDir dir("sig-plot");
  const std::vector<std::string> args = with(tiny_grid, {"--depths", "1,2", "--placements", "pre", "--out", "o"});
  const test::Outcome r = run_binary("amplification", args, dir.path, "drawing", SIGINT);
  INFO(r.out << r.err);
  CHECK(r.status == 130);
  CHECK_THAT(test::last_line(r.err), StartsWith("amplification: interrupted by SIGINT before drawing o/") &&
                                         Contains("o/INCOMPLETE marks the files of --out as incomplete"));
  CHECK(fs::exists(dir.path / "o" / "INCOMPLETE"));
  CHECK_FALSE(any_tmp_file(dir.path));
  const test::Outcome again = run_binary("amplification", args, dir.path);
  INFO(again.err);
  REQUIRE(again.status == 0);
  CHECK_FALSE(fs::exists(dir.path / "o" / "INCOMPLETE"));
  CHECK(fs::exists(dir.path / "o" / "adam_logits.png"));
}

TEST_CASE("explorer: SIGTERM between steps exits 143 and writes no page", "[reliability][signals][binaries]") {
  test::TempDir dir("sig-explorer");
  const test::Outcome r = run_binary(explorer, {"--runs", "pre:0", "--steps", "20", "--layers", "1", "--d-model", "8",
                                                  "--d-ff", "16", "--html", "p.html"},
                                     dir.path, "step.3", SIGTERM);
  INFO(r.err);
  CHECK(r.status == 143);
  CHECK_THAT(test::last_line(r.err), StartsWith("explorer: interrupted by SIGTERM at step 3 of a run; no page written"));
  CHECK_FALSE(fs::exists(dir.path / "p.html"));
}

// ---- numbers that parse but mean nothing: refused before any work ----

TEST_CASE("flags that do not apply, or mean nothing together, are refused naming both", "[reliability][flags][binaries]") {
  test::TempDir dir("nonsense");
  struct Case {
    std::string binary;
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {"train", {"--hold", "10", "--steps", "10"}, "--hold 10 is not less than --steps 10"},
           {"causes", {"--steps", "10", "--rows", "none,hold 20"}, "--hold 20 is not less than --steps 10: row 'hold 20'"},
           {"causes", {"--steps", "50", "--reset-step", "50", "--rows", "reset norms at 50"},
            "--reset-step 50 must be below --steps 50 (row 'reset norms at 50' acts then)"},
           {"causes", {"--steps", "12", "--warmups", "1000", "--rows", "none,warmup 1000"},
            "row 'warmup 1000' warms up over 1000 steps, not less than --steps 12: its run would end inside its warmup"},
           {"causes", {"--margin", "1e308"}, "--margin 1e+308 leaves no verdict 'trained' to give"},
           {"warmup", {"--margin", "3"}, "--margin 3 leaves no verdict 'trained' to give"},
           {"warmup", {"--warmups", "0,1000", "--steps", "12"}, "--warmups 1000 is not less than --steps 12: that run would end inside its warmup"},
           {"lrsweep", {"--variants", "pre", "--z-coef", "1"}, "--z-coef 1 sets the +z variants' z-loss, and --variants pre has none"},
           {"lrsweep", {"--variants", "pre,post", "--warmup", "5"}, "--warmup 5 sets the +warmup variants' warmup, and --variants pre,post has none"},
           {"lrsweep", {"--placements", "post"}, "--placements: lrsweep's placements are those of --variants"},
           {"lrsweep", {"--placement", "post"}, "--placement sets only the model --dump writes"},
           {"lrsweep", {"--adam-v0", "zero"}, "--adam-v0: lrsweep sets the z-loss and Adam's v0 per variant"},
           {"lrsweep", {"--variants", "pre+qk+qkrms"}, "--variants pre+qk+qkrms: qk and qkrms both set the qk-norm"},
           {"lrsweep", {"--variants", "pre+z+z"}, "--variants pre+z+z: option 'z' given twice"},
           {"train", {"--intervene", "none,detach-skip"}, "--intervene none,detach-skip: 'none' means no intervention"},
           {"train", {"--graph", "g.dot", "--graph-step", "1000000000000"}, "--graph-step 1000000000000 is not below --steps 1500"},
           {"train", {"--graph", "g.dot", "--resume", "."}, "not a checkpoint's: leave out --resume"},
           {"causes", {"--rows", "none,warmup 7"}, "--rows: no row 'warmup 7'"},
           {"train", {"--mixln-post", "1", "--placement", "pre"}, "--mixln-post 1 sets mixln's Post-LN blocks, and --placement pre"},
           {"train", {"--dyt-alpha", "3", "--norm", "layer"}, "--dyt-alpha 3 sets DyT's alpha, and --placement pre"},
           {"warmup", {"--mixln-post", "1"}, "has no mixln placement (e.g. --placement mixln)"},
           {"train", {"--optimizer", "sgd", "--adam-beta2", "0.9"}, "--adam-beta2 0.9 is a hyperparameter of Adam, and "
                                                                    "--optimizer is sgd"},
           {"train", {"--warmup", "18446744073709551615"}, "--warmup: '18446744073709551615' is too large"},
           // a seed list of 4e9 entries would be built before any check of memory
           {"warmup", {"--seeds", "4000000000"}, "--seeds: '4000000000' is too large for a whole number in [1, 1000]"},
           {explorer, {"--runs", "post:0,pre:0,post:0"}, "explorer: error: --runs: 'post:0' is given twice"},
           {explorer, {"--lr", "nan"}, "explorer: error: --lr: 'nan' is not a finite number > 0"},
           {explorer, {"--lr", "0"}, "explorer: error: --lr: '0' is not a finite number > 0"},
       }) {
    INFO(c.binary << " " << c.args.front());
    const test::Outcome r = run_binary(c.binary, c.args, dir.path);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(lines(r.err) == 1);
    CHECK_THAT(r.err, Contains(c.says));
  }
  CHECK(fs::is_empty(dir.path));  // no work started, nothing written
}

TEST_CASE("a --text file too short for one window of --seq is refused naming the file, the split and --seq",
          "[reliability][flags][binaries]") {
  test::TempDir dir("short-text");
  test::overwrite(dir.path / "short.txt", "abcabcabcabcabcabcab");  // 20 bytes: 18 to train on, 2 held out
  const test::Outcome r = run_binary("train", with(tiny, {"--text", "short.txt", "--steps", "2"}), dir.path);
  INFO(r.err);
  CHECK(r.status == 1);
  CHECK(lines(r.err) == 1);
  CHECK_THAT(r.err, Contains("--text short.txt: its validation split (the last 10% of the file) has 2 bytes, fewer than "
                             "the --seq + 1 = 9 of one window"));
}

TEST_CASE("causes and lrsweep check a default only where a run uses it", "[reliability][flags][binaries]") {
  test::TempDir dir("causes-defaults");
  // --hold 20, --reset-step 100 and --warmups 5,20,100 are all past --steps 3, and no row given uses them.
  const test::Outcome r = run_binary("causes", with(tiny_grid, {"--rows", "none", "--steps", "3", "--window", "2",
                                                                  "--eval-batches", "1", "--placements", "post"}),
                                     dir.path);
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains("causes: 1 runs"));
  // lrsweep's --warmup 50 is past --steps 3, and no variant warms up.
  const test::Outcome sweep = run_binary("lrsweep", with(tiny_grid, {"--variants", "pre", "--lrs", "1e-3", "--steps", "3",
                                                                       "--eval-batches", "1", "--layers", "1"}),
                                         dir.path);
  INFO(sweep.err);
  CHECK(sweep.status == 0);
}

TEST_CASE("mixln: --mixln-post K builds for every K from 0 to --layers, and is refused above", "[reliability][flags][binaries]") {
  test::TempDir dir("mixln");
  for (const std::string layers : {"1", "3"})
    for (int k = 0; k <= std::stoi(layers) + 1; ++k) {
      INFO("--layers " << layers << " --mixln-post " << k);
      std::vector<std::string> args = with(tiny, {"--steps", "1", "--placement", "mixln", "--mixln-post", std::to_string(k)});
      args[1] = layers;  // tiny's --layers
      const test::Outcome r = run_binary("train", args, dir.path);
      INFO(r.err);
      if (k <= std::stoi(layers)) {
        CHECK(r.status == 0);
        CHECK_THAT(r.out, Contains("\"mixln_post\": " + std::to_string(k)));
      } else {
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Contains("mixln_post " + std::to_string(k) + " is more than the " + layers + " layers"));
      }
    }
}

TEST_CASE("train refuses a resume to fewer steps than done, and a text of one distinct byte", "[reliability][flags][binaries]") {
  test::TempDir dir("train-nonsense");
  REQUIRE(run_binary("train", with(tiny, {"--steps", "4", "--save", "ck"}), dir.path).status == 0);
  const test::Outcome back = run_binary("train", {"--resume", "ck", "--steps", "2"}, dir.path);
  CHECK(back.status == 2);
  CHECK_THAT(back.err, Contains("--resume ck: the checkpoint is at step 4, past --steps 2: there is nothing to train"));
  test::overwrite(dir.path / "one.txt", std::string(5000, 'a'));
  const test::Outcome one = run_binary("train", with(tiny, {"--steps", "2", "--text", "one.txt"}), dir.path);
  CHECK(one.status == 1);
  CHECK_THAT(one.err, Contains("--text one.txt: has 1 distinct byte(s); a language model needs at least 2 symbols"));
}

TEST_CASE("a checkpoint holding a NaN weight is refused naming the tensor", "[reliability][checkpoint]") {
  test::TempDir dir("nan-checkpoint");
  test::TinyRun run(5);
  nn::save_checkpoint(dir.path / "ck", "test", run.model, run.model.config, 1, &run.adam);
  const fs::path file = dir.path / "ck" / "head.bias.npy";
  Array bias = nn::parse_npy_real(nn::read_file(file), file.string(), {7});
  bias.data()[1] = std::numeric_limits<double>::quiet_NaN();
  test::overwrite(file, nn::npy_bytes(bias));
  test::reseal(dir.path / "ck");
  test::TinyRun other(6);
  CHECK_THROWS_WITH(nn::load_checkpoint(dir.path / "ck", other.model, other.model.config, &other.adam),
                    Contains("parameter 'head.bias'") && Contains("holds NaN at element 1"));
  // And a model with a NaN is not saved.
  run.model.named_parameters().front().parameter.value().data()[0] = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(nn::save_checkpoint(dir.path / "ck2", "test", run.model, run.model.config, 1, &run.adam),
                    Contains("not saving") && Contains("holds Inf at element 0"));
  CHECK_FALSE(fs::exists(dir.path / "ck2"));
}

namespace {

// A cell's result as a training grid writes it (warmup's, lrsweep's): the quantities --merge checks.
struct TrainedCell {
  std::vector<double> losses;
  double final_loss = NAN;
  std::size_t blew_up = 0;
  int verdict = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TrainedCell, losses, final_loss, blew_up, verdict)

// Shard k of n of `results` (one per cell of `g`) into DIR.
void write_test_shard(const fs::path& dir, const gs::experiments::Grid& g, std::size_t k, std::size_t n,
                      const std::vector<TrainedCell>& results) {
  const gs::experiments::Shard s{k, n};
  std::vector<nlohmann::json> mine;
  for (std::size_t c : s.cells(g.size())) mine.push_back(results[c]);
  gs::experiments::write_shard(dir, g, s.cells(g.size()), mine, "test", s, "");
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a merge refuses a shard file cut short, and a verdict that is no code", "[reliability][shards]") {
  test::TempDir dir("shards");
  using namespace gs::experiments;
  Grid g;
  g.axis("lr", {"0.01", "0.1"});
  write_test_shard(dir.path / "s", g, 1, 1, {{{2.0}, 1.5, 0, 0}, {{2.0}, 2.5, 0, 0}});
  const nlohmann::json blank = TrainedCell{};
  REQUIRE(read_shards({(dir.path / "s").string()}, g, "test", "", blank).size() == 2);
  const fs::path file = dir.path / "s" / shard_file;
  const std::string text = nn::read_file(file);
  test::overwrite(file, text.substr(0, text.size() / 2));
  CHECK_THROWS_WITH(read_shards({(dir.path / "s").string()}, g, "test", "", blank),
                    Contains("--merge " + (dir.path / "s").string() + ": shard.json is not JSON") && Contains("cut short or changed"));
  test::overwrite(file, replaced(text, "\"verdict\":0", "\"verdict\":7"));
  CHECK_THROWS_WITH(read_shards({(dir.path / "s").string()}, g, "test", "", blank), Contains("verdict 7, not a verdict code"));
  test::overwrite(file, replaced(text, "\"verdict\":0", "\"verdict\":0,\"grad_ratio\":1"));
  CHECK_THROWS_WITH(read_shards({(dir.path / "s").string()}, g, "test", "", blank),
                    Contains("cell 0 (lr 0.01): grad_ratio is not a quantity this program measures"));
}

TEST_CASE("a merge checks every value as the run would have written it, naming the shard", "[reliability][shards]") {
  test::TempDir dir("shard-values");
  using namespace gs::experiments;
  Grid g;
  g.axis("lr", {"0.01", "0.1"});
  const std::vector<TrainedCell> results = {{{3.0, 2.5, 2.0}, 2.25, 0, 0}, {{3.0, NAN}, NAN, 2, 2}};
  const fs::path s1 = dir.path / "s1", s2 = dir.path / "s2";
  write_test_shard(s1, g, 1, 2, results);
  write_test_shard(s2, g, 2, 2, results);
  const std::vector<std::string> both = {s1.string(), s2.string()};
  const nlohmann::json blank = TrainedCell{};
  const std::vector<MergedCell> merged = read_shards(both, g, "test", "", blank);
  CHECK(merged[1].result.get<TrainedCell>().blew_up == 2);
  // A quantity the result has and the shard lacks: the error names the shard and the cell.
  nlohmann::json more = blank;
  more["grad_ratio"] = 0.0;
  CHECK_THROWS_WITH(read_shards(both, g, "test", "", more),
                    Contains("--merge " + s1.string() + ": cell 0 (lr 0.01): no quantity named grad_ratio"));

  const std::string good1 = nn::read_file(s1 / shard_file), good2 = nn::read_file(s2 / shard_file);
  test::overwrite(s1 / shard_file, replaced(good1, "\"final_loss\":2.25", "\"final_loss\":-7"));
  CHECK_THROWS_WITH(read_shards(both, g, "test", "", blank),
                    Contains("--merge " + s1.string() + ": cell 0 has final_loss -7, not a loss"));
  test::overwrite(s1 / shard_file, replaced(good1, "\"blew_up\":0", "\"blew_up\":7"));
  CHECK_THROWS_WITH(read_shards(both, g, "test", "", blank),
                    Contains("--merge " + s1.string() + ": cell 0 has blew_up 7 but 3 training losses"));
  test::overwrite(s1 / shard_file, replaced(good1, "\"blew_up\":0", "\"blew_up\":0.5"));
  CHECK_THROWS_WITH(read_shards(both, g, "test", "", blank), Contains("has blew_up 0.5, not a step number"));
  test::overwrite(s1 / shard_file, good1);
  test::overwrite(s2 / shard_file, replaced(good2, "\"verdict\":2", "\"verdict\":0"));
  CHECK_THROWS_WITH(read_shards(both, g, "test", "", blank),
                    Contains("--merge " + s2.string() + ": cell 1 has blew_up 2 but verdict 0, not 2 (diverged)"));
  test::overwrite(s2 / shard_file, replaced(good2, "\"final_loss\":\"nan\"", "\"final_loss\":2.5"));
  CHECK_THROWS_WITH(read_shards(both, g, "test", "", blank), Contains("cell 1 has blew_up 2 but a final loss of 2.5"));
  test::overwrite(s2 / shard_file, good2);
  CHECK(read_shards(both, g, "test", "", blank).size() == 2);
}

// ---- measurements that mean nothing, memory ----

TEST_CASE("amplification: an --eps whose perturbation overflows or vanishes is an error naming it, and leaves no --out",
          "[reliability][binaries]") {
  test::TempDir dir("eps");
  for (const std::string eps : {"1e300", "1e-300"}) {
    fs::remove_all(dir.path / "o");
    const test::Outcome r =
        run_binary("amplification", with(tiny_grid, {"--depths", "1,2", "--placements", "pre", "--eps", eps, "--out", "o"}), dir.path);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Contains("amplification: error: --eps " + std::string(eps == "1e300" ? "1e+300" : "1e-300") +
                               " gives A = "));
    CHECK_FALSE(fs::exists(dir.path / "o"));  // the --out this run created, with nothing written, is gone again
    CHECK_FALSE(fs::exists(dir.path / "o.lock"));
  }
  // An --out that was there before is left as it was.
  fs::create_directories(dir.path / "mine");
  const test::Outcome r = run_binary(
      "amplification", with(tiny_grid, {"--depths", "1,2", "--placements", "pre", "--eps", "1e300", "--out", "mine"}), dir.path);
  CHECK(r.status == 2);
  CHECK(names_in(dir.path / "mine") == std::vector<std::string>{nn::manifest_name});
}

TEST_CASE("the memory estimate covers --graph, the snapshot list and the benchmark's chain", "[reliability][memory][binaries]") {
  test::TempDir dir("memory");
  const test::Outcome graph = run_binary("train", {"--layers", "100000", "--graph", "g.dot"}, dir.path);
  CHECK(graph.status == 1);
  CHECK_THAT(graph.err, Contains("this run needs about") && Contains("set by --graph with --layers 100000"));
  const test::Outcome chain = run_binary("bench_engine_overhead", {"--chain", "2000000000", "--reps", "1"}, dir.path);
  CHECK(chain.status == 1);
  CHECK_THAT(chain.err, Contains("this run needs about") && Contains("--chain 2000000000"));
  const test::Outcome snapshots = run_binary(explorer, {"--snapshot-steps", "0:99999999:1"}, dir.path);
  CHECK(snapshots.status == 1);
  CHECK_THAT(snapshots.err, Contains("more than 10000 snapshot steps"));
  CHECK_FALSE(fs::exists(dir.path / "g.dot"));
}

}  // namespace test_reliability
