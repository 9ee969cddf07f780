// A save killed at any moment (SIGKILL, as by a power cut or the OOM killer) leaves the previous
// checkpoint whole and loadable (in place, or under DIR.old-PID if killed between the two renames), and
// the next save of the same output works beside the leftovers. The saving process is
// tests/helpers/io_helper.cpp; GRADSCOPE_IO_HELPER_STOP_AT makes it stop itself at a step of the save,
// where this test kills it.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "check.hpp"
#include "io_helpers.hpp"
#include "nn/io/checkpoint.hpp"
#include "nn/transformer_lm.hpp"

#ifndef GRADSCOPE_IO_HELPER
#error "tests/CMakeLists.txt passes the path of gradscope_io_helper"
#endif

namespace test_io_interrupt {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;
namespace fs = std::filesystem;

namespace {

// Runs `gradscope_io_helper dir seed`. With a pause point, waits until the helper has stopped itself
// there, kills it with SIGKILL and returns its pid; without one, requires that it succeeds.
pid_t run_helper(const fs::path& dir, unsigned seed, const char* pause_at = nullptr) {
  const std::string seed_text = std::to_string(seed);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (pause_at) ::setenv("GRADSCOPE_IO_HELPER_STOP_AT", pause_at, 1);
    else ::unsetenv("GRADSCOPE_IO_HELPER_STOP_AT");
    ::execl(GRADSCOPE_IO_HELPER, GRADSCOPE_IO_HELPER, dir.c_str(), seed_text.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  REQUIRE(pid > 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, WUNTRACED) == pid);
  if (pause_at) {
    INFO("the helper should have stopped at " << pause_at);
    REQUIRE(WIFSTOPPED(status));
    REQUIRE(::kill(pid, SIGKILL) == 0);
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFSIGNALED(status));
    REQUIRE(WTERMSIG(status) == SIGKILL);
  } else {
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
  }
  return pid;
}

// The checkpoint in `dir` loads, and holds the helper's model and optimizer state for `seed`.
void require_checkpoint_of(const fs::path& dir, unsigned seed) {
  const test::TinyRun expected(seed);
  const ModelConfig config = test::saved_config(99);  // other weights, overwritten by the load
  TransformerLM loaded(config);
  Adam adam(loaded.named_parameters(), adamw_options(0.01));
  const CheckpointInfo info = load_checkpoint(dir, loaded, config, &adam);
  REQUIRE(info.step == seed);
  REQUIRE(info.program == "io_helper");
  REQUIRE(adam.steps() == 1);
  const auto a = expected.model.named_parameters(), b = loaded.named_parameters();
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(test::same_bits(a[i].parameter.value(), b[i].parameter.value()));
    REQUIRE(test::same_bits(expected.adam.slot(1, i), adam.slot(1, i)));
  }
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("a save killed inside the write leaves the previous checkpoint whole, and the next save works beside the leftovers",
          "[io][interrupt]") {
  for (const char* step : {"written", "aside", "cleaning"}) {
    INFO("killed at " << step);
    test::TempDir tmp("interrupt");
    const fs::path ck = tmp.path / "ck";
    run_helper(ck, 1);
    require_checkpoint_of(ck, 1);
    const pid_t killed = run_helper(ck, 2, step);
    const std::string pid = std::to_string(killed), tmp_dir = "ck.tmp-" + pid, old_dir = "ck.old-" + pid;
    if (std::string(step) == "written") {  // before any rename: the previous checkpoint in place
      require_checkpoint_of(ck, 1);
      REQUIRE(entries(tmp.path) == std::vector<std::string>{"ck", tmp_dir});
    } else if (std::string(step) == "aside") {  // between the renames: both versions whole, under their names
      require_checkpoint_of(tmp.path / old_dir, 1);
      require_checkpoint_of(tmp.path / tmp_dir, 2);
      REQUIRE(entries(tmp.path) == std::vector<std::string>{old_dir, tmp_dir});
    } else {  // after them: the new checkpoint in place, the previous one left beside it
      require_checkpoint_of(ck, 2);
      require_checkpoint_of(tmp.path / old_dir, 1);
      REQUIRE(entries(tmp.path) == std::vector<std::string>{"ck", old_dir});
    }
    // The next run saves under its own pid; the leftovers stay for the user to remove.
    const std::vector<std::string> leftovers = entries(tmp.path);
    run_helper(ck, 3);
    require_checkpoint_of(ck, 3);
    std::vector<std::string> expected = leftovers;
    if (std::find(expected.begin(), expected.end(), "ck") == expected.end()) expected.insert(expected.begin(), "ck");
    REQUIRE(entries(tmp.path) == expected);
  }
}

TEST_CASE("a first save killed half way leaves no checkpoint, and the next one saves", "[io][interrupt]") {
  test::TempDir tmp("interrupt-first");
  const fs::path ck = tmp.path / "ck";
  const pid_t killed = run_helper(ck, 2, "written");
  const std::string leftover = "ck.tmp-" + std::to_string(killed);
  REQUIRE(entries(tmp.path) == std::vector<std::string>{leftover});
  REQUIRE_THROWS_WITH(read_checkpoint_info(ck), Catch::Contains("is not a directory"));
  run_helper(ck, 4);
  require_checkpoint_of(ck, 4);
  REQUIRE(entries(tmp.path) == std::vector<std::string>{"ck", leftover});
}

}  // namespace test_io_interrupt
