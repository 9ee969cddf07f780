// The memory estimate that refuses runs which cannot fit (experiments/lib/memory.hpp): counted from
// a proxy model's tape, it must equal what a real model's tape holds after one forward and backward pass.
#include <sys/resource.h>

#include <fstream>
#include <string>

#include "check.hpp"
#include "experiments/lib/memory.hpp"
#include "nn/transformer_lm.hpp"
#include "engine/tools/inspect.hpp"

namespace test_experiments_memory {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::experiments;

namespace {

// Bytes of every value, gradient and (if kept) contribution on the tape after one step of `config`.
double measured_tape(const nn::ModelConfig& config, std::size_t batch, bool keep_contributions) {
  nn::TransformerLM model(config);
  Tape tape;
  TapeScope scope(tape);
  tape.keep_contributions = keep_contributions;
  const IndexArray ids = xt::zeros<std::int64_t>({batch, config.context});
  model.loss(ids, ids).backward();
  double elements = 0.0;
  for (std::size_t i = 0; i < tape.size(); ++i) {
    const Entry& e = tape.entry(static_cast<int>(i));
    elements += static_cast<double>(e.value.size());
    if (e.has_grad) elements += static_cast<double>(e.grad.size());
    for (const Contribution& c : e.contributions) elements += static_cast<double>(c.grad.size());
  }
  return 8.0 * elements;
}

}  // namespace

TEST_CASE("the memory estimate counts a real model's parameters and tape exactly, every placement", "[experiments][memory]") {
  std::vector<std::string> zoo = nn::placement_presets();
  for (const char* member : {"mixln", "b2t", "pre/rms", "pre/dyt", "pre/none", "post/layer/admin", "pre/layer/lns"})
    zoo.push_back(member);
  for (const std::string& placement : zoo)
    for (bool keep : {false, true}) {
      INFO(placement << (keep ? " keeping contributions" : ""));
      nn::ModelConfig c{.vocab = 9, .context = 6, .d_model = 8, .heads = 2, .layers = 4, .d_ff = 12, .seed = 1};
      nn::apply_placement(c, placement);
      const Footprint f = footprint(c, 3, 2, keep);
      REQUIRE(f.exact);
      REQUIRE(f.parameters == static_cast<double>(nn::TransformerLM(c).parameter_count()));
      REQUIRE(f.model == 8.0 * 4.0 * f.parameters);  // values, gradients, two optimizer slots
      REQUIRE(f.tape == Approx(measured_tape(c, 3, keep)).epsilon(1e-12));
    }
}

TEST_CASE("check_fits refuses a run larger than the memory available, naming the flags", "[experiments][memory]") {
  const nn::ModelConfig c{.vocab = 16, .context = 32, .d_model = 32, .heads = 2, .layers = 100000};
  const Footprint f = footprint(c, 32, 2, false);
  REQUIRE(f.total() > available_memory().bytes);
  REQUIRE_THROWS_WITH(check_fits(f, 1, 0.0, "--layers 100000"),
                      Catch::Contains(available_memory().source) && Catch::Contains("--layers 100000"));
  REQUIRE_NOTHROW(check_fits(footprint({.vocab = 16, .context = 8, .d_model = 8, .heads = 2, .layers = 2}, 4, 2, false),
                             2, 1e6, "--layers 2"));
}

TEST_CASE("the memory available is bounded by the process's own address-space limit, named when it binds",
          "[experiments][memory]") {
  struct rlimit before {};
  REQUIRE(::getrlimit(RLIMIT_AS, &before) == 0);
  std::ifstream status("/proc/self/status");
  std::string key;
  double vm_kb = -1.0;
  while (status >> key) {
    if (key == "VmSize:") { status >> vm_kb; break; }
  }
  REQUIRE(vm_kb > 0.0);
  const double room = 64e6;  // 64 MB beyond what the process maps now
  struct rlimit lowered = before;
  lowered.rlim_cur = static_cast<rlim_t>(vm_kb * 1024.0 + room);
  if (before.rlim_cur != RLIM_INFINITY && before.rlim_cur < lowered.rlim_cur) lowered.rlim_cur = before.rlim_cur;
  REQUIRE(::setrlimit(RLIMIT_AS, &lowered) == 0);
  const AvailableMemory a = available_memory();
  REQUIRE(::setrlimit(RLIMIT_AS, &before) == 0);  // restored before anything is checked
  CHECK(a.bytes <= room);
  CHECK(a.bytes > 0.0);
  CHECK_THAT(a.source, Catch::Contains("RLIMIT_AS"));
}

}  // namespace test_experiments_memory
