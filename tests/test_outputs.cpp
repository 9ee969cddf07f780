// Every binary's outputs go through nn/io/directory_write.hpp before any work: --out (a directory filled file
// by file), --dump (a directory written whole) and --graph (a single file, signed). A place holding
// what the program did not write is refused naming the flag and the path, and left as it was; the
// program's own earlier output is replaced. One binary per kind of output.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "io_helpers.hpp"
#include "nn/io/directory_write.hpp"
#include "run_binary.hpp"

namespace test_outputs {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::run_binary;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> small = {"--d-model", "8", "--heads", "2", "--seq", "6", "--batch", "3", "--seeds", "1",
                                        "--jobs", "1"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// A directory p holding a file p/f of the user's.
void users_directory(const fs::path& p) {
  fs::create_directories(p);
  test::overwrite(p / "f", "x\n");
}

void require_refused(const test::Outcome& r, const std::string& start) {
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  REQUIRE(r.err.rfind(start, 0) == 0);
  REQUIRE(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  REQUIRE(r.out.empty());  // refused before any work
}

}  // namespace

TEST_CASE("gradflow --dump p refuses a directory holding the user's file, and leaves it; its own dump it replaces",
          "[outputs][binaries]") {
  test::TempDir dir("outputs-dump");
  users_directory(dir.path / "p");
  require_refused(run_binary("gradflow", with(small, {"--depths", "1", "--dump", "p", "--out", "o"}), dir.path),
                  "gradflow: error: --dump p: is not empty and holds no gradscope-output.json");
  REQUIRE(test::read_file_or_empty(dir.path / "p" / "f") == "x\n");
  for (int run = 0; run < 2; ++run) {  // the second run replaces the first one's dump
    const test::Outcome ok = run_binary("gradflow", with(small, {"--depths", "1", "--dump", "d", "--out", "o"}), dir.path);
    INFO(ok.err);
    REQUIRE(ok.status == 0);
    REQUIRE(nn::read_manifest(dir.path / "d").tag.kind == "dump");
  }
  REQUIRE(test::leftovers(dir.path).empty());
}

TEST_CASE("stream --out p refuses a directory holding the user's file, and another program's output", "[outputs][binaries]") {
  test::TempDir dir("outputs-out");
  users_directory(dir.path / "p");
  const std::vector<std::string> args = with(small, {"--layers-list", "1", "--placements", "pre", "--steps", "0"});
  require_refused(run_binary("stream", with(args, {"--out", "p"}), dir.path),
                  "stream: error: --out p: ");
  REQUIRE(test::read_file_or_empty(dir.path / "p" / "f") == "x\n");
  REQUIRE(!fs::exists(dir.path / "p" / nn::manifest_name));
  for (int run = 0; run < 2; ++run) {  // its own --out it reuses
    const test::Outcome ok = run_binary("stream", with(args, {"--out", "o"}), dir.path);
    INFO(ok.err);
    REQUIRE(ok.status == 0);
  }
  require_refused(run_binary("gradflow", with(small, {"--depths", "1", "--out", "o"}), dir.path),
                  "gradflow: error: --out o: holds gradscope stream's output directory");
}

TEST_CASE("amplification and tape_demo: --graph refuses a file it did not write, replaces its own DOT and SVG, and "
          "a PNG (which carries no marker) or anyone's file only with --overwrite",
          "[outputs][binaries][dot]") {
  test::TempDir dir("outputs-graph");
  test::overwrite(dir.path / "mine.dot", "digraph { a -> b }\n");
  require_refused(run_binary("amplification", with(small, {"--layers", "1", "--graph", "mine.dot"}), dir.path),
                  "amplification: error: --graph mine.dot: ");
  require_refused(run_binary("tape_demo", {"--graph", "mine.dot"}, dir.path), "tape_demo: error: --graph mine.dot: ");
  REQUIRE(test::read_file_or_empty(dir.path / "mine.dot") == "digraph { a -> b }\n");
  const test::Outcome forced = run_binary("tape_demo", {"--graph", "mine.dot", "--overwrite"}, dir.path);
  INFO(forced.err);
  REQUIRE(forced.status == 0);
  REQUIRE(test::read_file_or_empty(dir.path / "mine.dot").find(nn::output_signature("tape_demo")) != std::string::npos);
  std::vector<std::string> files = {"g.dot"};
  const bool graphviz = std::system("command -v dot > /dev/null 2>&1") == 0;
  if (graphviz) files.push_back("g.svg");
  for (const std::string& file : files)
    for (int run = 0; run < 2; ++run) {  // the second run replaces the first one's file
      INFO(file << " run " << run);
      const test::Outcome ok = run_binary("amplification", with(small, {"--layers", "1", "--graph", file}), dir.path);
      INFO(ok.err);
      REQUIRE(ok.status == 0);
      REQUIRE(test::read_file_or_empty(dir.path / file).find(nn::output_signature("amplification")) != std::string::npos);
    }
  if (graphviz) {
    const std::vector<std::string> png = with(small, {"--layers", "1", "--graph", "g.png"});
    REQUIRE(run_binary("amplification", png, dir.path).status == 0);  // absent: created
    require_refused(run_binary("amplification", png, dir.path), "amplification: error: --graph g.png: ");
    REQUIRE(run_binary("amplification", with(png, {"--overwrite"}), dir.path).status == 0);
    REQUIRE(test::read_file_or_empty(dir.path / "g.png").rfind("\x89PNG", 0) == 0);
  }
  REQUIRE(test::leftovers(dir.path).empty());
}

}  // namespace test_outputs
