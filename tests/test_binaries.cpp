// Every binary of experiments/ and bench/ (their paths come from CMake, GRADSCOPE_BINARIES): --help
// states each flag's default, and a bad flag or a bad value is one line on stderr naming it, with a
// non-zero exit. Only the command line is exercised: nothing here trains or measures.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "nn/io/atomic_file.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<std::string> binaries() {
  std::vector<std::string> out;
  std::stringstream list(GRADSCOPE_BINARIES);
  for (std::string path; std::getline(list, path, ',');) out.push_back(path);
  return out;
}

struct Result {
  int status;  // the exit code, -1 if killed by a signal
  std::string out, err;
};

Result run(const std::string& binary, const std::string& args) {
  const fs::path dir = fs::temp_directory_path() / ("gradscope_test_binaries_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string command =
      "'" + binary + "' " + args + " > '" + (dir / "out").string() + "' 2> '" + (dir / "err").string() + "'";
  const int raw = std::system(command.c_str());
  Result r{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, gs::nn::read_file(dir / "out"), gs::nn::read_file(dir / "err")};
  fs::remove_all(dir);
  return r;
}

// The options of a CLI11 help text: the first column of each line "  --name TYPE=default   description".
std::vector<std::string> option_columns(const std::string& help) {
  std::vector<std::string> out;
  std::stringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  -", 0) != 0) continue;
    const std::size_t end = line.find("  ", 2);
    out.push_back(line.substr(2, end == std::string::npos ? std::string::npos : end - 2));
  }
  return out;
}

std::size_t lines_of(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("every binary: --help shows every flag's default; a bad flag or value is one line naming it",
          "[binaries]") {
  const std::vector<std::string> all = binaries();
  REQUIRE(all.size() >= 9);  // 7 experiments, 2 benchmarks
  for (const std::string& binary : all) {
    const std::string name = fs::path(binary).filename().string();
    INFO(binary);

    const Result help = run(binary, "--help");
    REQUIRE(help.status == 0);
    const std::vector<std::string> options = option_columns(help.out);
    REQUIRE(options.size() >= 2);  // --help and at least one flag
    std::string numeric;           // the first flag that takes a number
    for (const std::string& column : options) {
      INFO(column);
      const bool takes_value = column.find(' ') != std::string::npos;  // "--layers UINT:POSITIVE=8"
      if (takes_value) REQUIRE(column.find('=') != std::string::npos);  // a default is shown
      const bool is_number = column.find(" UINT") != std::string::npos || column.find(" INT") != std::string::npos ||
                             column.find(" FLOAT") != std::string::npos;
      if (is_number && numeric.empty()) numeric = column.substr(0, column.find(' '));
    }

    const Result bad_flag = run(binary, "--no-such-flag");
    REQUIRE(bad_flag.status != 0);
    REQUIRE(bad_flag.out.empty());
    REQUIRE(lines_of(bad_flag.err) == 1);
    REQUIRE(bad_flag.err.rfind(name + ": error: ", 0) == 0);
    REQUIRE(bad_flag.err.find("--no-such-flag") != std::string::npos);

    REQUIRE(!numeric.empty());
    INFO("a bad value for " << numeric);
    const Result bad_value = run(binary, numeric + " abc");
    REQUIRE(bad_value.status != 0);
    REQUIRE(bad_value.out.empty());
    REQUIRE(lines_of(bad_value.err) == 1);
    REQUIRE(bad_value.err.find(numeric) != std::string::npos);
    REQUIRE(bad_value.err.find("abc") != std::string::npos);
  }
}

TEST_CASE("tape_demo --graph and gradflow --graph write the graph, and exit 0", "[binaries][dot]") {
  const fs::path dir = fs::temp_directory_path() / ("gradscope_test_graph_flag_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const std::string& binary : binaries()) {
    const std::string name = fs::path(binary).filename().string();
    if (name != "tape_demo" && name != "gradflow") continue;
    INFO(binary);
    const fs::path file = dir / (name + ".dot");
    const std::string model = name == "gradflow" ? " --layers 1 --d-model 8 --heads 2 --seq 4 --batch 2" : "";
    const Result r = run(binary, "--graph '" + file.string() + "'" + model);
    REQUIRE(r.status == 0);
    const std::string dot = gs::nn::read_file(file);
    REQUIRE(dot.rfind("digraph tape {", 0) == 0);
    REQUIRE(dot.find("label=") != std::string::npos);
    if (name == "gradflow") REQUIRE(dot.find("label=\"branch ") != std::string::npos);
  }
  fs::remove_all(dir);
}
