// docs/lesson.md's commands, as a student copies them after scripts/demo: each names a binary that
// scripts/demo builds, takes only flags its --help lists, with values it accepts, and (for causes) only
// rows that exist. Their numbers are checked by scripts/check-findings, which runs them in full.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/io_helpers.hpp"
#include "tests/run_binary.hpp"

namespace test_lesson {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The words of a command line as a shell splits them: spaces separate, double quotes group, a word
// starting with # ends the line.
std::vector<std::string> shell_words(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool quoted = false, in_word = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
      in_word = true;
    } else if (c == ' ' && !quoted) {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      if (c == '#' && !in_word && !quoted) break;
      word += c;
      in_word = true;
    }
  }
  REQUIRE_FALSE(quoted);
  if (in_word) words.push_back(word);
  return words;
}

// The commands of docs/lesson.md: its indented code lines that start with build/bin/.
std::vector<std::vector<std::string>> lesson_commands() {
  std::stringstream doc(read_text(fs::path(GRADSCOPE_SOURCE_DIR) / "docs" / "lesson.md"));
  std::vector<std::vector<std::string>> commands;
  for (std::string line; std::getline(doc, line);)
    if (line.rfind("    build/bin/", 0) == 0) commands.push_back(shell_words(line.substr(4)));
  return commands;
}

// The names of the rows causes knows, from the one-line error it gives for a row it does not.
std::vector<std::string> causes_rows(const fs::path& cwd) {
  const gs::test::Outcome o = gs::test::run_binary("causes", {"--rows", "no such row"}, cwd);
  REQUIRE(o.status == 2);
  const std::string start = "(rows with today's flags: ";
  const std::size_t begin = o.err.find(start), end = o.err.find(") (", begin);
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  std::vector<std::string> rows;
  std::stringstream list(o.err.substr(begin + start.size(), end - begin - start.size()));
  for (std::string row; std::getline(list, row, ',');) rows.push_back(row.substr(row.find_first_not_of(' ')));
  return rows;
}

TEST_CASE("docs/lesson.md: every command runs a binary scripts/demo builds, with flags, values and rows it accepts",
          "[lesson][binaries]") {
  const std::vector<std::vector<std::string>> commands = lesson_commands();
  REQUIRE(commands.size() >= 5);
  const std::string demo = read_text(fs::path(GRADSCOPE_SOURCE_DIR) / "scripts" / "demo");
  const std::size_t targets = demo.find("--target ");
  REQUIRE(targets != std::string::npos);
  const std::vector<std::string> built = shell_words(demo.substr(targets + 9, demo.find('\n', targets) - targets - 9));
  gs::test::TempDir dir("lesson");
  const std::vector<std::string> rows = causes_rows(dir.path);
  REQUIRE(rows.size() > 10);
  for (const std::vector<std::string>& command : commands) {
    const std::string name = command[0].substr(std::string("build/bin/").size());
    INFO("docs/lesson.md: " << command[0] << " (" << command.size() - 1 << " words after it)");
    CHECK(std::find(built.begin(), built.end(), name) != built.end());
    const std::vector<std::string> args(command.begin() + 1, command.end());
    std::vector<std::string> with_help = args;
    with_help.push_back("--help");
    const gs::test::Outcome help = gs::test::run_binary(name, with_help, dir.path);
    CHECK(help.status == 0);  // CLI11 checks every value against its range before it prints the help
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (args[i].rfind("--", 0) == 0) CHECK(help.out.find("  " + args[i] + " ") != std::string::npos);
      if (name == "causes" && args[i] == "--rows" && i + 1 < args.size()) {
        std::stringstream list(args[i + 1]);
        for (std::string row; std::getline(list, row, ',');) {
          INFO("row '" << row << "'");
          CHECK(std::find(rows.begin(), rows.end(), row) != rows.end());
        }
      }
    }
  }
}

}  // namespace test_lesson
