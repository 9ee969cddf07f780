// gradscope_io_helper: the program tests/test_io_interrupt.cpp kills in the middle of a save.
//   gradscope_io_helper DIR SEED
// saves the checkpoint of a tiny TransformerLM initialised with SEED (and its AdamW state, one step
// taken) to DIR, as the train binary's --save does. With GRADSCOPE_TEST_PAUSE_AT set to a pause point
// of nn/io/directory_write.hpp, the save stops itself (SIGSTOP) there.
#include <cstdio>
#include <string>

#include "../io_helpers.hpp"
#include "nn/io/checkpoint.hpp"

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
