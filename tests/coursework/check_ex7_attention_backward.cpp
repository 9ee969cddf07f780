// The check of exercise 7, for the student: scripts/exercise 7 (docs/coursework.md#ex7)
#include "ex7_attention_backward.hpp"
#include "exercise.hpp"
#include "nn/attention.hpp"

namespace check_ex7_attention_backward {  // one namespace per test file: the files compile in groups

using namespace gs;

namespace {

// Causal attention as one tape entry: nn's forward value, your backward.
Var your_attention(const Var& q, const Var& k, const Var& v, std::size_t heads) {
  const Array att = nn::attention_weights_forward(q.value(), k.value(), heads);
  return q.tape().record("your_attention", {q, k, v}, nn::attention_mix_forward(att, v.value(), heads),
                         [heads](const BackwardArgs& g) -> Grads {
    return gs::coursework::attention_backward(g.grad, g.in(0), g.in(1), g.in(2), heads);
  }, Site::current());
}

}  // namespace

EXERCISE_CASE("ex7", "attention backward: equals the gradients the tape computes through the composite") {
  // attention_composite: reshape, permute, matmul, scale, masked_fill, softmax, matmul, ... on the tape.
  for (const auto& [C, heads] : {std::pair<std::size_t, std::size_t>{4, 1}, {6, 2}, {6, 3}}) {
    INFO("C = " << C << ", heads = " << heads);
    const Array qa = test::randn({2, 5, C}, 1), ka = test::randn({2, 5, C}, 2), va = test::randn({2, 5, C}, 3);
    const Array g = test::randn({2, 5, C}, 4);
    Tape tape;
    TapeScope scope(tape);
    Var q = tape.leaf(qa), k = tape.leaf(ka), v = tape.leaf(va);
    nn::attention_composite(q, k, v, heads).backward(g);
    const Grads yours = gs::coursework::attention_backward(g, qa, ka, va, heads);
    REQUIRE(yours.size() == 3);
    const char* names[] = {"dq", "dk", "dv"};
    const Var* inputs[] = {&q, &k, &v};
    for (std::size_t n = 0; n < 3; ++n) {
      INFO(names[n]);
      REQUIRE_CLOSE(yours[n], inputs[n]->grad(), test::tol(1e-10, 1e-4), test::tol(1e-12, 1e-5));
    }
  }
}

EXERCISE_CASE("ex7", "attention backward: an op with your backward passes a gradient check") {
  test::require_gradcheck([](const test::Vars& x) { return your_attention(x[0], x[1], x[2], 2); },
                          {test::randn({2, 3, 4}, 5), test::randn({2, 3, 4}, 6), test::randn({2, 3, 4}, 7)});
}

EXERCISE_CASE("ex7", "attention backward: the future gets no gradient") {
  // Position 0 of the output sees only position 0: a gradient on y at position 0 alone reaches k and v
  // at position 0 alone.
  const Array qa = test::randn({1, 4, 4}, 8), ka = test::randn({1, 4, 4}, 9), va = test::randn({1, 4, 4}, 10);
  Array g = xt::zeros<Real>({1, 4, 4});
  for (std::size_t c = 0; c < 4; ++c) g(0, 0, c) = 1.0;
  const Grads yours = gs::coursework::attention_backward(g, qa, ka, va, 2);
  for (std::size_t t = 1; t < 4; ++t)
    for (std::size_t c = 0; c < 4; ++c) {
      INFO("position " << t << ", column " << c);
      REQUIRE(yours[1](0, t, c) == 0.0);
      REQUIRE(yours[2](0, t, c) == 0.0);
    }
}

}  // namespace check_ex7_attention_backward
