// The check of exercise 11, for the student: scripts/exercise 11 (docs/coursework.md#ex11)
#include <string>

#include "nn/residual_edges.hpp"
#include "ex11_skip_branch.hpp"
#include "exercise.hpp"
#include "engine/engine.hpp"
#include "nn/transformer_lm.hpp"

namespace check_ex11_skip_branch {  // one namespace per test file: the files compile in groups

using namespace gs;

namespace {

// A 3-block model of `placement`, one backward with contributions kept; then every stream fork.
void require_same_split(const std::string& placement) {
  nn::TransformerLM model(coursework::small_config(placement, 3));
  Tape tape;
  TapeScope scope(tape);
  tape.keep_contributions = true;
  Var L = model.loss(IndexArray{{1, 2, 3, 4}, {5, 6, 0, 1}}, IndexArray{{2, 3, 4, 5}, {6, 0, 1, 2}});
  L.backward();
  int forks = 0;
  for (int s = 0; s < static_cast<int>(tape.size()); ++s) {
    if (!nn::is_stream_fork(tape, s) || !tape.entry(s).has_grad) continue;
    ++forks;
    INFO(placement << ": tape index " << s << " (" << tape.entry(s).op << " " << tape.entry(s).label << ")");
    const gs::coursework::SkipBranchParts yours = gs::coursework::skip_branch_split(tape, s);
    const nn::SkipBranch engine = nn::split_skip_branch(Var(tape, s, tape.generation()));
    REQUIRE_CLOSE(yours.skip, engine.skip, 1e-12, 1e-15);
    REQUIRE_CLOSE(yours.branch, engine.branch, 1e-12, 1e-15);
    REQUIRE_CLOSE(yours.skip + yours.branch, tape.entry(s).grad, test::tol(1e-12, 1e-4), test::tol(1e-15, 1e-5));
  }
  REQUIRE(forks == 6);  // two residual connections per block
}

}  // namespace

EXERCISE_CASE("ex11", "skip/branch split: equals the engine's at every fork of a Post-LN model") { require_same_split("post"); }

EXERCISE_CASE("ex11", "skip/branch split: equals the engine's at every fork of a Pre-LN model") { require_same_split("pre"); }

EXERCISE_CASE("ex11", "skip/branch split: a tape without contributions is refused") {
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.leaf(test::randn({2, 3}, 1));
  Var y = add(x, tanh(x)).mark_input(0, nn::skip_edge);
  sum(y).backward();  // keep_contributions is off
  try {
    gs::coursework::skip_branch_split(tape, x.index());
    FAIL("no gs::Error was thrown");
  } catch (const gs::Error& e) {
    INFO(e.what());
    REQUIRE(std::string(e.what()).find("skip_branch_split") != std::string::npos);
  }
}

}  // namespace check_ex11_skip_branch
