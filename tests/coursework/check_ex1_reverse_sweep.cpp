// The check of exercise 1, for the student: scripts/exercise 1 (docs/coursework.md#ex1)
#include <string>
#include <vector>

#include "ex1_reverse_sweep.hpp"
#include "exercise.hpp"
#include "engine/engine.hpp"
#include "nn/transformer_lm.hpp"

namespace check_ex1_reverse_sweep {  // one namespace per test file: the files compile in groups

using namespace gs;
using gs::coursework::reverse_sweep;

namespace {

// reverse_sweep's gradients against Tape::backward's, entry by entry: equal where backward reached an
// entry, zeros elsewhere. Runs reverse_sweep first, so that it sees a tape no backward has touched.
void require_same_as_backward(Tape& tape, const Var& root, const Array& seed) {
  for (std::size_t i = 0; i < tape.size(); ++i) REQUIRE_FALSE(tape.entry(static_cast<int>(i)).has_grad);
  const std::vector<Array> g = reverse_sweep(tape, root.index(), seed);
  REQUIRE(g.size() == static_cast<std::size_t>(root.index() + 1));
  for (std::size_t i = 0; i < tape.size(); ++i)  // it changed nothing on the tape
    REQUIRE_FALSE(tape.entry(static_cast<int>(i)).has_grad);
  tape.backward(root, seed);
  for (int i = 0; i <= root.index(); ++i) {
    const Entry& e = tape.entry(i);
    INFO("entry " << i << " (op " << e.op << (e.label.empty() ? "" : ", " + e.label) << ", shape "
                  << shape_str(shape_of(e.value)) << ")");
    REQUIRE(shape_of(g[static_cast<std::size_t>(i)]) == shape_of(e.value));
    const Array expected = e.has_grad ? e.grad : Array(xt::zeros_like(e.value));
    REQUIRE_CLOSE(g[static_cast<std::size_t>(i)], expected, 1e-12, 1e-14);
  }
}

}  // namespace

EXERCISE_CASE("ex1", "reverse sweep: a chain, a shared input and a broadcast bias") {
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.leaf(test::randn({3, 4}, 1)).named("x");
  Var W = tape.leaf(test::randn({4, 2}, 2)).named("W");
  Var b = tape.leaf(test::randn({2}, 3)).named("b");      // (2,) broadcast over 3 rows: its gradient is summed
  Var h = tanh(matmul(x, W) + b);                        // (3, 2)
  Var L = sum(h * h) + mean(x * x);                      // x read by two ops, h by one op twice
  require_same_as_backward(tape, L, xt::ones_like(L.value()));
}

EXERCISE_CASE("ex1", "reverse sweep: constants and entries off the path get zeros") {
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.leaf(test::randn({2, 3}, 4));
  Var c = tape.constant(test::randn({2, 3}, 5));  // requires no gradient
  Var unused = exp(x);                            // on the tape, not on the path to the root
  (void)unused;
  Var L = sum(x * c + c);
  require_same_as_backward(tape, L, xt::ones_like(L.value()));
}

EXERCISE_CASE("ex1", "reverse sweep: a non-scalar root with a seed of its shape") {
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.leaf(test::randn({2, 1, 3}, 6));
  Var y = tape.leaf(test::randn({4, 1}, 7));
  Var z = sigmoid(x * y);  // (2, 4, 3): both inputs broadcast
  require_same_as_backward(tape, z, test::randn({2, 4, 3}, 8));
}

EXERCISE_CASE("ex1", "reverse sweep: a whole language model's loss") {
  nn::TransformerLM model(coursework::small_config("post", 2));
  Tape tape;
  TapeScope scope(tape);
  Var L = model.loss(IndexArray{{1, 2, 3, 4}, {5, 6, 0, 1}}, IndexArray{{2, 3, 4, 5}, {6, 0, 1, 2}});
  require_same_as_backward(tape, L, xt::ones_like(L.value()));
}

}  // namespace check_ex1_reverse_sweep
