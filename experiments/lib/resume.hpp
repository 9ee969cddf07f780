// Exact resume: a checkpoint records the value of every flag that decides the run, and a resumed run
// takes them all from it. A binary sorts its flags into three kinds:
//   - not recorded: outputs and what only prints (--out, --save, --dump, --sample, ...);
//   - free: recorded and restored when not given, but a resumed run may change them (--steps, to
//     train further; --eval-every);
//   - every other flag: recorded, restored when not given, and refused when given with another value:
//       --resume ck: --lr 0.02 contradicts the checkpoint, which was trained with --lr 0.01 (leave --lr out)
// A flag is compared by its value as the flag reads it (flag_value, flags.hpp): --lr 1e-2 equals
// --lr 0.01, --placement sandwich equals peri. Only flags given on the command line are compared
// (CLI11's count()); a flag left out is never compared against its default. A flag added to a binary
// later is recorded and compared without any change here.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace CLI {
class App;
}

namespace gs::experiments {

struct FlagKinds {
  std::vector<std::string> not_recorded;  // --help is never recorded
  std::vector<std::string> free;
  std::vector<std::string> checked_by_caller;  // restored when not given, compared by the binary itself
};

// {"--lr": "0.01", "--schedule": "cosine", ...}: every flag with a value but the not-recorded ones.
nlohmann::json flag_record(const CLI::App& app, const FlagKinds& kinds);

// For a run resumed from `checkpoint`: every recorded flag that was not given takes the recorded value;
// a given one (not free) must have the recorded value. Throws gs::Error naming the flag and both values,
// or a recorded flag this binary does not have. `recorded` is the checkpoint's train.flags.
void restore_flags(CLI::App& app, const nlohmann::json& recorded, const FlagKinds& kinds, const std::string& checkpoint);

}  // namespace gs::experiments
