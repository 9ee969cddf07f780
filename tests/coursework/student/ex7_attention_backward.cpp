// Your answer to exercise 7: the task is ex7_attention_backward.hpp, explained in
// docs/coursework.md#ex7. Check it with scripts/exercise 7.
#include "../ex7_attention_backward.hpp"

namespace gs::coursework {

Grads attention_backward(const Array& grad, const Array& q, const Array& k, const Array& v, std::size_t heads) {
  // For each batch b and head h: A from the head's columns of q and k (mask j > i), then dA, dV, dS,
  // dQ, dK into the head's columns of dq, dk, dv (arrays of q's shape; element (b, t, c) is q(b, t, c)).
  (void)grad, (void)q, (void)k, (void)v, (void)heads;
  fail("attention_backward", Site::current(), "not implemented yet: see docs/coursework.md#ex7; check with scripts/exercise 7");
}

}  // namespace gs::coursework
