// Your answer to exercise 5: the task is ex5_layernorm_backward.hpp, explained in
// docs/coursework.md#ex5 (derive it first; docs/layernorm.md is the answer). Check it with scripts/exercise 5.
#include "../ex5_layernorm_backward.hpp"

namespace gs::coursework {

Grads layernorm_backward(const Array& grad, const Array& x, const Array& weight, double eps) {
  // d = x.shape().back(), rows = x.size() / d; row r is x.data() + r * d (and the same in grad).
  // Per row: mu, var, rstd; then what your derivation needs; then dx; add into dw and db.
  // return {std::move(dx), std::move(dw), std::move(db)};
  (void)grad, (void)x, (void)weight, (void)eps;
  fail("layernorm_backward", Site::current(), "not implemented yet: see docs/coursework.md#ex5; check with scripts/exercise 5");
}

}  // namespace gs::coursework
