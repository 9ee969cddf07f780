// Running the experiment binaries from a test (their paths come from CMake, GRADSCOPE_BINARIES): to
// completion, or stopped at a test pause point (GRADSCOPE_TEST_PAUSE_AT) to be sent a signal there.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "nn/io/atomic_file.hpp"

#ifndef GRADSCOPE_BINARIES
#error "tests/CMakeLists.txt passes the binaries' paths"
#endif

namespace gs::test {

namespace fs = std::filesystem;

inline std::string binary_path(const std::string& name) {
  std::stringstream list(GRADSCOPE_BINARIES);
  for (std::string path; std::getline(list, path, ',');)
    if (fs::path(path).filename() == name) return path;
  FAIL("no binary " << name);
  return "";
}

struct Outcome {
  int status = -1;  // the exit code, -1 if a signal killed it
  std::string out, err;
};

// Starts `name args...` (a binary of GRADSCOPE_BINARIES, or a path) in `cwd`, its stdout and stderr
// going to cwd/.stdout and cwd/.stderr, with GRADSCOPE_TEST_PAUSE_AT=pause_at if given; with a pause
// point, returns once the process has stopped itself there. Returns its pid.
inline pid_t start_binary(const std::string& name, const std::vector<std::string>& args, const fs::path& cwd,
                          const char* pause_at = nullptr) {
  const fs::path out = cwd / ".stdout", err = cwd / ".stderr";
  const std::string binary = name.find('/') != std::string::npos ? name : binary_path(name);  // a path: as it is
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    if (pause_at) ::setenv("GRADSCOPE_TEST_PAUSE_AT", pause_at, 1);
    else ::unsetenv("GRADSCOPE_TEST_PAUSE_AT");
    if (!std::freopen(out.c_str(), "w", stdout) || !std::freopen(err.c_str(), "w", stderr)) ::_exit(126);
    std::vector<char*> argv{const_cast<char*>(binary.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  REQUIRE(pid > 0);
  if (pause_at) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, WUNTRACED) == pid);
    INFO("the binary should have stopped itself at " << pause_at);
    REQUIRE(WIFSTOPPED(status));
  }
  return pid;
}

// Runs `name args...` as start_binary does and waits for its end. With a pause point, sends it `signal`
// and SIGCONT once it has stopped there.
inline Outcome run_binary(const std::string& name, const std::vector<std::string>& args, const fs::path& cwd,
                          const char* pause_at = nullptr, int signal = 0) {
  const pid_t pid = start_binary(name, args, cwd, pause_at);
  if (pause_at) {
    REQUIRE(::kill(pid, signal) == 0);
    REQUIRE(::kill(pid, SIGCONT) == 0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  const fs::path out = cwd / ".stdout", err = cwd / ".stderr";
  Outcome o{WIFEXITED(status) ? WEXITSTATUS(status) : -1, nn::read_file(out), nn::read_file(err)};
  fs::remove(out);
  fs::remove(err);
  return o;
}

// The last line of a program's stderr (the progress line goes to stderr before it), with its '\n'.
inline std::string last_line(const std::string& err) {
  const std::size_t start = err.size() < 2 ? 0 : err.rfind('\n', err.size() - 2);
  return start == std::string::npos || err.size() < 2 ? err : err.substr(start + 1);
}

// Every entry under `dir` whose name has ".tmp-" or ".old-" in it: what an interrupted write leaves.
inline std::vector<std::string> leftovers(const fs::path& dir) {
  std::vector<std::string> found;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp-") != std::string::npos || name.find(".old-") != std::string::npos) found.push_back(name);
  }
  return found;
}

}  // namespace gs::test
