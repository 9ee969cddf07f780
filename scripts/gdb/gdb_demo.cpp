// gdb_demo: the program that docs/debugging.md steps through in gdb. Two Pre-LN residual steps on two
// positions of width 4, a loss, and one backward pass:
//   h = x + tanh(LN1(x) W1),   y = h + tanh(LN2(h) W2),   loss = mean(y^2)
// Both LayerNorms are fused (one tape entry each, whose backward calls gs::nn::layernorm_backward). cmake/gdb.cmake builds this with -O0 -g in every
// build type, so that gdb sees the same locals in the release tree (where the walkthrough's test runs)
// as in build/debug.
#include <cstdio>

#include "engine/engine.hpp"
#include "nn/layernorm.hpp"
#include "nn/residual_edges.hpp"

using namespace gs;

// s + f(s), with its two input edges tagged as a Transformer block tags them (nn/block.cpp): the
// printers and gs-tape show which gradient came along the skip and which through the branch.
Var residual(const Var& skip, const Var& branch, Site site = Site::current()) {
  return add(skip, branch, site).mark_input(0, nn::skip_edge, site).mark_input(1, nn::branch_out_edge, site);
}

// A next step: reset() keeps the emptied entries for reuse, and the printers must show only the new
// one (scripts/gdb/check-walkthrough breaks here, by name, and checks after it returns).
void next_step(Tape& tape) {
  tape.reset();
  Var z = tape.leaf(Array{1.0}).named("z");
  std::printf("after reset: %zu entry, z = %g\n", tape.size(), z.value()());
}

int main() {
  Tape& tape = Tape::current();
  nn::LayerNorm ln1(4), ln2(4);                                       // weight ones, bias zeros
  Array a = 0.5 * xt::sin(xt::arange<double>(1.0, 17.0));            // fixed values: every run is the same
  Array b = 0.5 * xt::cos(xt::arange<double>(1.0, 17.0));
  a.reshape({4, 4});
  b.reshape({4, 4});
  Parameter w1(a, "w1"), w2(b, "w2");                                // (4, 4) each

  tape.keep_contributions = true;  // every entry keeps the gradients summed into it: the walkthrough shows h's two
  Var x = tape.leaf(Array{{0.5, -1.0, 2.0, 0.0}, {1.5, 0.5, -0.5, 1.0}}).named("x");  // (2, 4)
  Var h = residual(x, tanh(matmul(ln1.forward(x), w1))).named("h");  // (2, 4)  the first residual add
  Var y = residual(h, tanh(matmul(ln2.forward(h), w2))).named("y");  // (2, 4)  the second
  Var loss = mean(y * y).named("loss");                        // ()
  loss.backward();
  std::printf("loss = %.6f\n", loss.value()());
  next_step(tape);
  return 0;
}
