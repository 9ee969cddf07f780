// gradscope_io_helper: the program tests/test_io_interrupt.cpp kills in the middle of a save.
//   gradscope_io_helper DIR SEED
// saves the checkpoint of a tiny TransformerLM initialised with SEED (and its AdamW state, one step
// taken) to DIR, as the train binary's --save does. With GRADSCOPE_IO_HELPER_STOP_AT set, it stops
// itself (SIGSTOP) at that step of nn::write_directory_atomically, for the test to kill it there:
//   written   every file is in DIR.tmp-PID, before it is flushed to the disk (syncfs)
//   aside     DIR has been renamed to DIR.old-PID, the new version is not yet in
//   cleaning  the new version is DIR, the old one not yet removed
// The steps are found by defining syncfs and rename here: the linker binds nn's calls to these
// definitions instead of the C library's, so the product code carries no hook.
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../io_helpers.hpp"
#include "nn/io/checkpoint.hpp"

namespace {

void stop_at(const char* step) {
  const char* at = std::getenv("GRADSCOPE_IO_HELPER_STOP_AT");
  if (at && std::strcmp(at, step) == 0) ::raise(SIGSTOP);
}

}  // namespace

extern "C" int syncfs(int fd) noexcept {
  stop_at("written");
  return static_cast<int>(::syscall(SYS_syncfs, fd));
}

// DIR to DIR.old-PID is "aside"; DIR.tmp-PID to DIR (where there was a DIR before) is "cleaning".
extern "C" int rename(const char* from, const char* to) noexcept {
  static bool aside = false;
  const int rc = ::renameat(AT_FDCWD, from, AT_FDCWD, to);
  if (rc == 0 && std::strstr(to, ".old-")) {
    aside = true;
    stop_at("aside");
  } else if (rc == 0 && aside) {
    stop_at("cleaning");
  }
  return rc;
}

int main(int argc, char** argv) {
  using namespace gs;
  if (argc != 3) {
    std::fprintf(stderr, "usage: gradscope_io_helper DIR SEED\n");
    return 2;
  }
  try {
    const auto seed = static_cast<unsigned>(std::stoul(argv[2]));
    test::TinyRun run(seed);
    nn::save_checkpoint(argv[1], "io_helper", run.model, test::saved_config(seed), seed, &run.adam);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gradscope_io_helper: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
