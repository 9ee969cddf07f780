// Output ownership (nn/io/directory_write.hpp, experiments/lib/outputs.hpp): what
// gradscope did not write is never deleted or overwritten (unless --overwrite names a single file),
// directories are replaced as a whole, leftovers of interrupted writes are left for the user to remove.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "check.hpp"
#include "io_helpers.hpp"
#include "experiments/lib/outputs.hpp"
#include "nn/io/directory_write.hpp"

namespace test_io_output {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;
using gs::experiments::check_output_dir;
using gs::experiments::claim_output_dir;
using gs::test::overwrite;
using gs::test::read_file_or_empty;
using gs::test::TempDir;
namespace fs = std::filesystem;

namespace {

// The id of a process that has exited (a child that exits at once, reaped).
long dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

// A directory as write_directory_atomically leaves it, with one file, for `tag`.
void write_dir(const fs::path& dir, const OutputTag& tag, const std::string& contents) {
  write_directory_atomically(dir, tag, [&](DirectoryWriter& out) { out.write("a.txt", contents); });
}

std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

const OutputTag out_tag{"train", "out"}, dump_tag{"train", "dump"};

}  // namespace

TEST_CASE("claim_output_dir: creates, or reuses only this program's own --out directory", "[io][output]") {
  TempDir tmp("claim");
  const fs::path dir = tmp.path / "runs" / "a";
  claim_output_dir(dir, "--out", out_tag);  // created with its parents, and marked
  REQUIRE(read_manifest(dir).tag.program == "train");
  REQUIRE(read_manifest(dir).tag.kind == "out");
  overwrite(dir / "train.csv", "step\n1\n");
  claim_output_dir(dir, "--out", out_tag);  // its own: reused, its files kept
  REQUIRE(read_file_or_empty(dir / "train.csv") == "step\n1\n");

  fs::create_directories(tmp.path / "empty");
  REQUIRE_NOTHROW(claim_output_dir(tmp.path / "empty", "--out", out_tag));

  fs::create_directories(tmp.path / "mine");
  overwrite(tmp.path / "mine" / "thesis.tex", "precious");
  REQUIRE_THROWS_WITH(claim_output_dir(tmp.path / "mine", "--out", out_tag),
                      Catch::StartsWith("--out " + (tmp.path / "mine").string() + ": is not empty and holds no " +
                                        manifest_name));
  REQUIRE(entries(tmp.path / "mine") == 1);
  REQUIRE_THROWS_WITH(claim_output_dir(dir, "--out", {"warmup", "out"}),
                      Catch::Contains("holds gradscope train's output directory, not gradscope warmup's output directory"));
  overwrite(tmp.path / "file", "x");
  REQUIRE_THROWS_WITH(claim_output_dir(tmp.path / "file", "--out", out_tag), Catch::Contains("exists and is not a directory"));
  REQUIRE_THROWS_WITH(claim_output_dir(tmp.path / "file" / "sub", "--out", out_tag),
                      Catch::Contains("--out " + (tmp.path / "file" / "sub").string() + ": " +
                                      (tmp.path / "file").string() + " is not a directory"));
  if (fs::is_directory("/sys"))  // not writable, even for root
    REQUIRE_THROWS_WITH(claim_output_dir("/sys/gradscope-test", "--out", out_tag),
                        Catch::StartsWith("--out /sys/gradscope-test: cannot create anything in /sys"));
}

TEST_CASE("a directory written as a whole replaces only this program's own output of that kind", "[io][output]") {
  TempDir tmp("replace");
  // The data loss: mkdir p && echo x > p/f && train --dump p deleted p/f.
  const fs::path p = tmp.path / "p";
  fs::create_directories(p);
  overwrite(p / "f", "x");
  REQUIRE_THROWS_WITH(check_output_dir(p, "--dump", dump_tag),
                      Catch::Equals("--dump " + p.string() + ": is not empty and holds no gradscope-output.json, so it "
                                    "is not gradscope train's dump; not replacing it"));
  REQUIRE_THROWS_WITH(write_dir(p, dump_tag, "new"), Catch::Contains("not replacing it"));
  REQUIRE(read_file_or_empty(p / "f") == "x");
  REQUIRE(entries(tmp.path) == 1);  // nothing beside it either

  const fs::path d = tmp.path / "d";
  REQUIRE_NOTHROW(check_output_dir(d, "--dump", dump_tag));  // absent: fine, and nothing created
  REQUIRE_FALSE(fs::exists(d));
  write_dir(d, dump_tag, "one");
  write_dir(d, dump_tag, "two");  // its own earlier dump: replaced
  REQUIRE(read_file_or_empty(d / "a.txt") == "two");
  REQUIRE(VerifiedDirectory(d, "dump").read("a.txt", 100) == "two");
  REQUIRE_THROWS_WITH(write_dir(d, {"train", "checkpoint"}, "x"), Catch::Contains("holds gradscope train's dump"));
  REQUIRE_THROWS_WITH(write_dir(d, {"gradflow", "dump"}, "x"), Catch::Contains("not gradscope gradflow's dump"));
  overwrite(d / "notes.txt", "mine");  // a file the user put into it makes it foreign
  REQUIRE_THROWS_WITH(check_output_dir(d, "--dump", dump_tag),
                      Catch::Contains("holds notes.txt, which gradscope train's dump did not write"));
  fs::remove(d / "notes.txt");
  fs::create_directories(d / "sub");
  REQUIRE_THROWS_WITH(write_dir(d, dump_tag, "three"), Catch::Contains("holds sub, which"));
  fs::remove(d / "sub");

  fs::create_directories(tmp.path / "empty");
  write_dir(tmp.path / "empty", dump_tag, "x");  // an empty directory holds nothing to lose
  REQUIRE(read_file_or_empty(tmp.path / "empty" / "a.txt") == "x");
  fs::create_directory_symlink(d, tmp.path / "link");
  REQUIRE_THROWS_WITH(check_output_dir(tmp.path / "link", "--save", dump_tag), Catch::Contains("is a symbolic link"));
  REQUIRE_THROWS_WITH(check_output_dir(tmp.path / "p" / "f", "--save", dump_tag), Catch::Contains("is not a directory"));
  REQUIRE_THROWS_WITH(check_output_dir(".", "--save", dump_tag), Catch::Contains("cannot be replaced as a whole"));

  // A fill that fails leaves the previous version and nothing else.
  REQUIRE_THROWS_WITH(write_directory_atomically(d, dump_tag, [](DirectoryWriter& out) {
                        out.write("a.txt", "half");
                        throw Error("disk full, say");
                      }),
                      Catch::Equals("disk full, say"));
  REQUIRE(read_file_or_empty(d / "a.txt") == "two");
  // Names that would leave the directory are refused.
  for (const char* bad : {"../x", "/etc/x", "a//b", "a/./b", "", manifest_name})
    REQUIRE_THROWS_WITH(write_directory_atomically(tmp.path / "n", dump_tag, [&](DirectoryWriter& out) { out.write(bad, "x"); }),
                        Catch::Contains("not a plain relative file name"));
  std::size_t locks = 0;  // this process's locks of the outputs it checked (experiments::lock_output): d.lock, ...
  for (const fs::directory_entry& e : fs::directory_iterator(tmp.path)) locks += e.path().extension() == ".lock";
  REQUIRE(entries(tmp.path) - locks == 4);  // p, d, empty, link: the refused writes left nothing
}

TEST_CASE("leftovers of interrupted writes are left alone: the next run writes under its own pid", "[io][output]") {
  TempDir tmp("leftovers");
  const fs::path d = tmp.path / "ck";
  write_dir(d, {"train", "checkpoint"}, "now");
  const std::string dead = std::to_string(dead_pid());
  const OutputTag ck{"train", "checkpoint"};
  for (const std::string& name : {"ck.tmp-" + dead, std::string("ck.tmp-1")}) {
    fs::create_directories(tmp.path / name);
    overwrite(tmp.path / name / "x.npy", "partial");
    overwrite(tmp.path / name / manifest_name, manifest_text(ck, nullptr));
  }
  check_output_dir(d, "--save", ck);
  write_dir(d, ck, "next");
  REQUIRE(read_file_or_empty(d / "a.txt") == "next");
  REQUIRE(read_file_or_empty(tmp.path / ("ck.tmp-" + dead) / "x.npy") == "partial");
  REQUIRE(read_file_or_empty(tmp.path / "ck.tmp-1" / "x.npy") == "partial");
}

TEST_CASE("check_output_file: a file is replaced only if it carries this program's marker, or with --overwrite",
          "[io][output]") {
  TempDir tmp("file");
  const fs::path g = tmp.path / "g.svg";
  REQUIRE_NOTHROW(check_output_file(g, "--graph", "train"));
  REQUIRE_FALSE(fs::exists(g));
  overwrite(g, "<svg><!-- " + output_signature("train") + " --></svg>");
  REQUIRE_NOTHROW(check_output_file(g, "--graph", "train"));
  REQUIRE_THROWS_WITH(check_output_file(g, "--graph", "gradflow"),
                      Catch::Contains("exists and was not written by gradscope gradflow"));
  overwrite(g, "<svg>a drawing of mine</svg>");
  REQUIRE_THROWS_WITH(check_output_file(g, "--graph", "train"),
                      Catch::StartsWith("--graph " + g.string() + ": exists and was not written by gradscope train") &&
                          Catch::Contains("or give --overwrite"));
  REQUIRE_NOTHROW(check_output_file(g, "--graph", "train", true));  // --overwrite: the user said so
  REQUIRE(read_file_or_empty(g) == "<svg>a drawing of mine</svg>");  // (checking changes nothing)
  // The signature must be near the start: a file that quotes it somewhere late is not recognised.
  overwrite(g, std::string(5000, ' ') + output_signature("train"));
  REQUIRE_THROWS_WITH(check_output_file(g, "--graph", "train"), Catch::Contains("first 4 KiB"));

  REQUIRE_THROWS_WITH(check_output_file(tmp.path, "--graph", "train"), Catch::Contains("is a directory"));
  REQUIRE_THROWS_WITH(check_output_file(tmp.path, "--graph", "train", true), Catch::Contains("is a directory"));
  fs::create_symlink(g, tmp.path / "link.svg");
  REQUIRE_THROWS_WITH(check_output_file(tmp.path / "link.svg", "--graph", "train"), Catch::Contains("symbolic link"));
  REQUIRE(::mkfifo((tmp.path / "fifo.svg").c_str(), 0600) == 0);
  REQUIRE_THROWS_WITH(check_output_file(tmp.path / "fifo.svg", "--graph", "train"), Catch::Contains("not a regular file"));
  REQUIRE_THROWS_WITH(check_output_file(g / "x.svg", "--graph", "train"), Catch::Contains("is not a directory"));
  if (fs::is_directory("/sys"))
    REQUIRE_THROWS_WITH(check_output_file("/sys/g.svg", "--graph", "train"), Catch::Contains("cannot create anything in /sys"));

  // Leftovers of an interrupted render are left alone, whoever wrote them.
  fs::remove(g);
  const std::string dead = std::to_string(dead_pid());
  overwrite(tmp.path / ("g.svg.tmp-" + dead + ".dot"), "// " + output_signature("train") + "\ndigraph {}");
  check_output_file(tmp.path / "g.svg", "--graph", "train");
  REQUIRE(fs::exists(tmp.path / ("g.svg.tmp-" + dead + ".dot")));
}

TEST_CASE("a PNG carries no marker: an existing one is replaced only with --overwrite", "[io][output]") {
  TempDir tmp("png");
  const fs::path g = tmp.path / "g.png";
  REQUIRE_NOTHROW(check_output_file(g, "--graph", "train"));  // absent: created new
  overwrite(g, std::string("\x89PNG\r\n\x1a\n", 8) + "a picture of someone's");
  REQUIRE_THROWS_WITH(check_output_file(g, "--graph", "train"), Catch::Contains("not overwriting it"));
  REQUIRE_NOTHROW(check_output_file(g, "--graph", "train", true));
}

}  // namespace test_io_output
