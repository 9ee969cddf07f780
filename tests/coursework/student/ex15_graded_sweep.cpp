// Your answer to exercise 15: the task is ex15_graded_sweep.hpp, explained in docs/coursework.md#ex15.
// Check it with scripts/exercise 15.
#include "../ex15_graded_sweep.hpp"

namespace gs::coursework {

std::vector<std::vector<Array>> graded_sweep(const Tape& tape, int root, const std::vector<TapeEdge>& marked,
                                             std::size_t K, const std::vector<int>& wanted) {
  // Keep K + 1 coefficients per entry (grads[i][j], empty where nothing arrived); seed grads[root][0] = 1.
  // Walk i from root down to 0 like Tape::backward (engine/tape.cpp): for each coefficient j of entry i,
  // call tape.entry(i).backward with BackwardArgs{coefficient j, the entry's value, its inputs' values,
  // their requires_grad}, and add part k, through sum_to_shape, into input k's coefficient j, or j + 1
  // (at most K) when (i, k) is in `marked`.
  (void)tape, (void)root, (void)marked, (void)K, (void)wanted;
  fail("graded_sweep", Site::current(), "not implemented yet: see docs/coursework.md#ex15; check with scripts/exercise 15");
}

}  // namespace gs::coursework
