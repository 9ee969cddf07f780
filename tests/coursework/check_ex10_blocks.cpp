// The check of exercise 10, for the student: scripts/exercise 10 (docs/coursework.md#ex10)
#include <string>
#include <vector>

#include "../nn_gradcheck.hpp"
#include "ex10_blocks.hpp"
#include "exercise.hpp"
#include "engine/engine.hpp"

namespace check_ex10_blocks {  // one namespace per test file: the files compile in groups

using namespace gs;

namespace {

using BlockFunction = Var (*)(nn::Block&, const Var&);

struct Pass {
  Array y, dx;
  std::vector<Array> dparams;
};

// y and the gradients of x and of every parameter for L = sum(y * g), with `f` as the block.
Pass run(nn::Block& block, const Array& x, const Array& g, const std::function<Var(const Var&)>& f) {
  block.zero_grad();
  Tape tape;
  TapeScope scope(tape);
  Var xv = tape.leaf(x);
  Var y = f(xv);
  y.backward(g);
  Pass p{y.value(), xv.grad(), {}};
  for (const nn::NamedParameter& np : block.named_parameters()) p.dparams.push_back(np.parameter.grad());
  return p;
}

void require_same_block(const std::string& placement, BlockFunction yours) {
  nn::ModelConfig c = test::gradcheck_config(placement);  // d = 4, 2 heads, d_ff = 8
  nn::Initializer init(nn::Init::xavier, 1);
  nn::Block block(c, 0, init);
  test::jitter(block.named_parameters(), 0.3, 2);  // no LN weight exactly 1, no bias exactly 0
  const Array x = test::randn({2, 3, 4}, 3), g = test::randn({2, 3, 4}, 4);
  const Pass mine = run(block, x, g, [&](const Var& v) { return yours(block, v); });
  const Pass nns = run(block, x, g, [&](const Var& v) { return block.forward(v); });
  REQUIRE_CLOSE(mine.y, nns.y, 1e-12, 1e-14);
  REQUIRE_CLOSE(mine.dx, nns.dx, 1e-10, 1e-12);
  const std::vector<nn::NamedParameter> params = block.named_parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    INFO("the gradient of " << params[i].name);
    REQUIRE_CLOSE(mine.dparams[i], nns.dparams[i], 1e-10, 1e-12);
  }
}

}  // namespace

EXERCISE_CASE("ex10", "blocks: post_ln_block equals nn's Post-LN block, in value and every gradient") {
  require_same_block("post", gs::coursework::post_ln_block);
}

EXERCISE_CASE("ex10", "blocks: pre_ln_block equals nn's Pre-LN block, in value and every gradient") {
  require_same_block("pre", gs::coursework::pre_ln_block);
}

EXERCISE_CASE("ex10", "blocks: each function computes its own placement, whatever the block's") {
  // On a block built as Pre-LN, post_ln_block must still be Post-LN (and so differ from block.forward).
  nn::Initializer init(nn::Init::xavier, 5);
  nn::Block pre(test::gradcheck_config("pre"), 0, init), post(test::gradcheck_config("post"), 0, init);
  test::jitter(pre.named_parameters(), 0.3, 6);
  test::jitter(post.named_parameters(), 0.3, 7);
  const Array x = test::randn({2, 3, 4}, 8), g = test::randn({2, 3, 4}, 9);
  const Array post_on_pre = run(pre, x, g, [&](const Var& v) { return gs::coursework::post_ln_block(pre, v); }).y;
  const Array pre_on_post = run(post, x, g, [&](const Var& v) { return gs::coursework::pre_ln_block(post, v); }).y;
  REQUIRE_FALSE(xt::allclose(post_on_pre, run(pre, x, g, [&](const Var& v) { return pre.forward(v); }).y, 1e-6, 1e-6));
  REQUIRE_FALSE(xt::allclose(pre_on_post, run(post, x, g, [&](const Var& v) { return post.forward(v); }).y, 1e-6, 1e-6));
  // Post-LN's output comes out of LN2: with LN2's weight 1 and bias 0, every position has mean 0.
  nn::Block fresh(test::gradcheck_config("pre"), 0, init);
  const Array y = run(fresh, x, g, [&](const Var& v) { return gs::coursework::post_ln_block(fresh, v); }).y;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 3; ++t) REQUIRE_SMALL(y(b, t, 0) + y(b, t, 1) + y(b, t, 2) + y(b, t, 3), test::tol(1e-12, 1e-5));
}

EXERCISE_CASE("ex10", "blocks: both pass a gradient check w.r.t. the input and every parameter") {
  for (const char* placement : {"post", "pre"}) {
    INFO(placement);
    nn::Initializer init(nn::Init::xavier, 10);
    nn::Block block(test::gradcheck_config(placement), 0, init);
    test::jitter(block.named_parameters(), 0.2, 11);
    const BlockFunction f = std::string(placement) == "post" ? gs::coursework::post_ln_block : gs::coursework::pre_ln_block;
    REQUIRE_PARAM_GRADCHECK(block.named_parameters(), {test::randn({2, 3, 4}, 12)},
                            [&](const std::vector<Var>& v) { return f(block, v[0]); });
  }
}

}  // namespace check_ex10_blocks
