// --html FILE on every binary that trains or measures a model (the harness gives it to each,
// experiments/lib/harness.hpp): a tiny run writes a page that read_explorer_page reads back with the
// runs the binary recorded, a file gradscope did not write is refused and left as it was, the binary's
// own earlier page is replaced, and --html is refused in --shard runs. The binaries' paths come from
// CMake (GRADSCOPE_BINARIES, as in test_binaries.cpp).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "explorer/page.hpp"
#include "io_helpers.hpp"
#include "nn/io/atomic_file.hpp"

namespace test_html_flag {  // one namespace per test file: the files compile in groups

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using gs::test::TempDir;

namespace {

std::string binary(const std::string& name) {
  std::stringstream list(GRADSCOPE_BINARIES);
  for (std::string path; std::getline(list, path, ',');)
    if (fs::path(path).filename() == name) return path;
  FAIL("no binary " << name << " in GRADSCOPE_BINARIES");
  return {};
}

struct Result {
  int status;
  std::string err;
};

// Runs `name args` in `dir`; stdout is dropped, stderr kept.
Result run(const std::string& name, const std::string& args, const fs::path& dir) {
  const std::string command = "cd '" + dir.string() + "' && '" + binary(name) + "' " + args + " > /dev/null 2> err.txt";
  const int raw = std::system(command.c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, gs::nn::read_file(dir / "err.txt")};
}

struct Case {
  std::string program, args;
  std::vector<std::string> runs;  // the run names the page holds, in order
  std::size_t snapshots;          // of the first run
};

// Tiny runs: 2 layers, 2 placements (or one), a few steps, one seed.
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"train", "--steps 4 --layers 2 --seq 8 --batch 4 --eval-batches 1 --snapshot-steps 0,2,3",
       {"pre, adamw lr 0.01, warmup 100"}, 3},
      {"gradflow", "--placements post,pre --layers 2 --depths 2 --seeds 1 --seq 8 --batch 4 --out out",
       {"post, layers 2, seed 0", "pre, layers 2, seed 0"}, 1},
      {"paths", "--placements post,pre --layers-list 2 --seeds 1 --seq 8 --batch 4 --out out",
       {"post, layers 2, seed 0", "pre, layers 2, seed 0"}, 1},
      {"amplification", "--placements post --depths 1,2 --seeds 1 --batches 1 --seq 8 --batch 4 --out out",
       {"post, layers 1, seed 0", "post, layers 2, seed 0"}, 1},
      {"stream", "--placements post,pre --layers-list 2 --seeds 1 --steps 2 --seq 8 --batch 4 --out out",
       {"layers 2, post, seed 0", "layers 2, pre, seed 0"}, 3},  // steps 0, 1 and the measured pass 2
      {"dynamics", "--placements post,pre --warmups 0 --seeds 1 --steps 3 --layers 2 --seq 8 --batch 4 --out out",
       {"post, warmup 0, seed 0", "pre, warmup 0, seed 0"}, 3},
      {"paths_training", "--placements post,pre --warmups 0 --seeds 1 --steps 3 --profile-steps 0,3 --layers 2 "
                         "--seq 8 --batch 4 --eval-batches 1 --out out",
       {"post, warmup 0, seed 0", "pre, warmup 0, seed 0"}, 3},
      {"warmup", "--placements pre --warmups 0,2 --lrs 1e-2 --datasets markov --seeds 1 --steps 3 --window 1 "
                 "--layers 2 --seq 8 --batch 4 --eval-batches 1 --out out",
       {"markov, pre, warmup 0, lr 0.01, seed 0", "markov, pre, warmup 2, lr 0.01, seed 0"}, 3},
  };
  return all;
}

}  // namespace

TEST_CASE("html flag: every binary that trains or measures writes a page of its runs, read back whole", "[html][binaries]") {
  for (const Case& c : cases()) {
    SECTION(c.program) {
      TempDir dir("html-" + c.program);
      const Result r = run(c.program, c.args + " --html page.html", dir.path);
      INFO(c.program << " " << c.args << "\n" << r.err);
      REQUIRE(r.status == 0);
      const gs::explorer::Page page = gs::explorer::read_explorer_page(dir.path / "page.html");
      CHECK(page.title == "gradscope " + c.program);
      REQUIRE(page.runs.size() == c.runs.size());
      for (std::size_t i = 0; i < c.runs.size(); ++i) CHECK(page.runs[i].name == c.runs[i]);
      const gs::explorer::Run& first = page.runs[0];
      CHECK_FALSE(first.series.empty());
      if (first.graph) {  // drawn where Graphviz's dot is installed; else the note says why
        CHECK(first.graph->snapshots.size() == c.snapshots);
        CHECK(first.graph->snapshots[0].step == 0);
      } else {
        CHECK_THAT(first.graph_note, Contains("dot"));
      }
      CHECK_THAT(gs::nn::read_file(dir.path / "page.html"), Contains("written by gradscope " + c.program));

      // Its own page is replaced; --html-add puts a page's runs in (renamed " (2)" when taken).
      const Result again = run(c.program, c.args + " --html page.html --html-add page.html", dir.path);
      INFO(again.err);
      REQUIRE(again.status == 0);
      const gs::explorer::Page both = gs::explorer::read_explorer_page(dir.path / "page.html");
      REQUIRE(both.runs.size() == 2 * c.runs.size());
      CHECK(both.runs[c.runs.size()].name == c.runs[0] + " (2)");
    }
  }
}

TEST_CASE("html flag: a file gradscope did not write, or another program's page, is refused and left untouched "
          "unless --overwrite is given",
          "[html][binaries]") {
  TempDir dir("html-foreign");
  const std::string notes = "<!doctype html>\n<p>my notes</p>\n";
  gs::nn::write_file_atomically(dir.path / "notes.html", notes);
  for (const Case& c : cases()) {
    const Result r = run(c.program, c.args + " --html notes.html", dir.path);
    INFO(c.program << ": " << r.err);
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Contains("--html notes.html") && Contains("not overwriting"));
    CHECK(gs::nn::read_file(dir.path / "notes.html") == notes);
    CHECK_FALSE(fs::exists(dir.path / "out"));  // refused before any work
  }
  // train's page is not gradflow's to replace.
  const Case& train = cases()[0];
  REQUIRE(run("train", train.args + " --html train.html", dir.path).status == 0);
  const std::string page = gs::nn::read_file(dir.path / "train.html");
  const Result r = run("gradflow", cases()[1].args + " --html train.html", dir.path);
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("written by gradscope gradflow"));
  CHECK(gs::nn::read_file(dir.path / "train.html") == page);
  // --overwrite: the user says the file may go.
  const Result forced = run("gradflow", cases()[1].args + " --html train.html --overwrite", dir.path);
  INFO(forced.err);
  CHECK(forced.status == 0);
  CHECK_THAT(gs::nn::read_file(dir.path / "train.html"), Contains("written by gradscope gradflow"));
  // --html-add of a file that is not a page, and --html in a shard, are refused at once.
  const Result bad_add = run("train", train.args + " --html p.html --html-add err.txt", dir.path);
  CHECK(bad_add.status == 1);
  CHECK_THAT(bad_add.err, Contains("--html-add err.txt") && Contains("not an explorer page"));
  const Result shard = run("gradflow", cases()[1].args + " --html p.html --shard 1/2", dir.path);
  CHECK(shard.status == 2);
  CHECK_THAT(shard.err, Contains("--html records the runs this process trains"));
  CHECK_FALSE(fs::exists(dir.path / "p.html"));
}

}  // namespace test_html_flag
