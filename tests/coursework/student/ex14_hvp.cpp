// Your answer to exercise 14: the task is ex14_hvp.hpp, explained in docs/coursework.md#ex14.
// Check it with scripts/exercise 14.
#include "../ex14_hvp.hpp"

namespace gs::coursework {

std::vector<Array> hessian_vector_product(const analysis::LossFunction& loss, std::vector<Parameter> parameters,
                                          const std::vector<Array>& v) {
  // 1. h from |theta| and |v|.  2. Save every p.value().  3. Set p.value() = saved + h v, then the
  // gradient: Tape::current().reset(), p.zero_grad() for each p, loss().backward(), read p.grad().
  // 4. The same at saved - h v.  5. Put the saved values back; return (g+ - g-) / 2h per parameter.
  (void)loss, (void)parameters, (void)v;
  fail("hessian_vector_product", Site::current(),
       "not implemented yet: see docs/coursework.md#ex14; check with scripts/exercise 14");
}

}  // namespace gs::coursework
