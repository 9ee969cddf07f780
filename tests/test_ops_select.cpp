// Selection by a boolean mask: where (cond ? a : b, all three broadcasting) and masked_fill (the
// causal mask of attention). The gradient flows only to the side that was picked.
#include "check.hpp"
#include "engine/engine.hpp"
#include "engine/broadcast.hpp"

namespace test_ops_select {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::require_gradcheck;
using test::Vars;

namespace {

// A reproducible mask with both values present.
Mask random_mask(const Shape& shape, unsigned seed) {
  const Array r = test::randn(shape, seed);
  Mask m = r > 0.0;
  return m;
}

// A (n, 1) mask from n values (a nested braced list of one-element rows is ambiguous for xtensor).
Mask column(std::initializer_list<bool> values) {
  Mask m = Mask::from_shape({values.size(), 1});
  std::copy(values.begin(), values.end(), m.begin());
  return m;
}

// True strictly above the diagonal: position i may not look at a later position j > i.
Mask causal_mask(std::size_t n) {
  Mask m = Mask::from_shape({n, n});
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) m(i, j) = j > i;
  return m;
}

}  // namespace

TEST_CASE("where picks a where cond holds and b elsewhere, broadcasting all three", "[select][where]") {
  Tape tape;
  const Array av = test::randn({3, 4}, 1), bv = test::randn({4}, 2);
  const Mask cond = column({true, false, true});  // (3, 1): whole rows
  Var a = tape.leaf(av), b = tape.leaf(bv);
  Var y = gs::where(cond, a, b);
  REQUIRE(y.shape() == Shape{3, 4});
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) REQUIRE(y.value()(i, j) == (cond(i, 0) ? av(i, j) : bv(j)));
  // dy/da = cond, dy/db = not cond, summed over the rows b was repeated along.
  sum(y).backward();
  REQUIRE(a.grad() == Array{{1, 1, 1, 1}, {0, 0, 0, 0}, {1, 1, 1, 1}});
  REQUIRE(b.grad() == Array{1, 1, 1, 1});
  // A 0-d operand and a condition larger than both operands.
  Var s = tape.leaf(Array(7.0));
  Var row = tape.leaf(Array{1.0, 2.0, 3.0, 4.0});
  const Mask big = random_mask({2, 4}, 3);
  Var z = gs::where(big, s, row);
  REQUIRE(z.shape() == Shape{2, 4});
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 4; ++j) REQUIRE(z.value()(i, j) == (big(i, j) ? 7.0 : row.value()(j)));
  sum(z).backward();
  REQUIRE(s.grad()() == static_cast<double>(xt::sum(xt::cast<double>(big))()));
}

TEST_CASE("where agrees with a by-hand loop for every combination of broadcast operands", "[select][where]") {
  // Regression: xtensor 0.24's vectorized xt::where picked wrong elements when any operand broadcast.
  const std::vector<Shape> shapes = {{3, 4}, {1, 4}, {4}, {3, 1}, {}};
  auto at = [](const auto& x, std::size_t i, std::size_t j) {
    const std::size_t r = x.dimension();
    if (r == 0) return x();
    if (r == 1) return x(x.shape(0) == 1 ? 0 : j);
    return x(x.shape(0) == 1 ? 0 : i, x.shape(1) == 1 ? 0 : j);
  };
  unsigned seed = 60;
  for (const Shape& sc : shapes)
    for (const Shape& sa : shapes)
      for (const Shape& sb : shapes) {
        const Shape ab = broadcast_shapes(sa, sb, "test", Site::current());
        const Shape out = broadcast_shapes(sc, ab, "test", Site::current());
        if (out != Shape{3, 4}) continue;
        INFO("cond " << shape_str(sc) << ", a " << shape_str(sa) << ", b " << shape_str(sb));
        Tape tape;
        const Mask c = random_mask(sc, ++seed);
        const Array av = test::randn(sa, ++seed), bv = test::randn(sb, ++seed);
        Var a = tape.leaf(av), b = tape.leaf(bv);
        Var y = gs::where(c, a, b);
        for (std::size_t i = 0; i < 3; ++i)
          for (std::size_t j = 0; j < 4; ++j) REQUIRE(y.value()(i, j) == (at(c, i, j) ? at(av, i, j) : at(bv, i, j)));
        Var full = a + tape.constant(xt::zeros<Real>({3, 4}));  // x in the full shape
        Var m = masked_fill(full, c, -7.0);  // masked_fill with the same (possibly broadcast) mask
        for (std::size_t i = 0; i < 3; ++i)
          for (std::size_t j = 0; j < 4; ++j) REQUIRE(m.value()(i, j) == (at(c, i, j) ? -7.0 : at(av, i, j)));
      }
}

TEST_CASE("where passes gradcheck, with and without broadcasting", "[select][where][gradcheck]") {
  const Mask full = random_mask({3, 4}, 10);
  require_gradcheck([full](const Vars& v) { return gs::where(full, v[0], v[1]); },
                    {test::randn({3, 4}, 11), test::randn({3, 4}, 12)});
  const Mask col = random_mask({3, 1}, 13);
  require_gradcheck([col](const Vars& v) { return gs::where(col, v[0], v[1]); },
                    {test::randn({4}, 14), test::randn({3, 4}, 15)});
  const Mask row = {true, false, false, true};
  require_gradcheck([row](const Vars& v) { return gs::where(row, v[0], v[1]); },
                    {test::randn({3, 1}, 16), Array(0.5)});
  require_gradcheck([full](const Vars& v) { return gs::where(full, v[0], v[1]); },
                    {test::randn({1, 4}, 17), test::randn({3, 1}, 18)});
  // The same value on both sides: the gradient is cond ? 1 : 2 everywhere, never lost.
  require_gradcheck([full](const Vars& v) { return gs::where(full, v[0], v[0] * 2.0); }, {test::randn({3, 4}, 19)});
  Tape tape;
  Var x = tape.leaf(test::randn({3, 4}, 20));
  sum(gs::where(full, x, x * 2.0)).backward();
  REQUIRE(x.grad() == Array(xt::where(full, 1.0, 2.0)));
}

TEST_CASE("masked_fill replaces masked positions and blocks their gradient", "[select][masked_fill]") {
  Tape tape;
  const Array xv = test::randn({3, 4}, 30);
  const Mask mask = random_mask({3, 4}, 31);
  Var x = tape.leaf(xv);
  Var y = masked_fill(x, mask, -5.0);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) REQUIRE(y.value()(i, j) == (mask(i, j) ? -5.0 : xv(i, j)));
  sum(y * 3.0).backward();
  REQUIRE(x.grad() == Array(xt::where(mask, 0.0, 3.0)));
  // A (4,) mask masks whole columns of every row.
  const Mask cols = {false, true, true, false};
  Var z = masked_fill(x, cols, 0.0);
  REQUIRE(z.shape() == Shape{3, 4});
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) REQUIRE(z.value()(i, j) == (cols(j) ? 0.0 : xv(i, j)));
}

TEST_CASE("masked_fill passes gradcheck with full and broadcast masks", "[select][masked_fill][gradcheck]") {
  const Mask full = random_mask({3, 4}, 40);
  require_gradcheck([full](const Vars& v) { return masked_fill(v[0], full, 2.0); }, {test::randn({3, 4}, 41)});
  const Mask col = column({true, false, false});
  require_gradcheck([col](const Vars& v) { return masked_fill(v[0], col, -1.0) * v[0]; }, {test::randn({3, 4}, 42)});
  const Mask none = xt::zeros<bool>({2, 3});
  require_gradcheck([none](const Vars& v) { return masked_fill(v[0], none, 0.0); }, {test::randn({2, 3}, 43)});
}

TEST_CASE("the causal mask: masked scores get zero probability and zero gradient", "[select][masked_fill][softmax]") {
  const std::size_t n = 4;
  const Mask causal = causal_mask(n);
  Tape tape;
  Var scores = tape.leaf(test::randn({n, n}, 50));
  Var p = softmax(masked_fill(scores, causal, -1e9));
  for (std::size_t i = 0; i < n; ++i) {
    double row = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      if (j > i) REQUIRE(p.value()(i, j) == 0.0);
      row += p.value()(i, j);
    }
    REQUIRE(row == Approx(1.0).epsilon(test::tol(1e-15, 1e-5)));
  }
  REQUIRE(p.value()(0, 0) == 1.0);  // the first position sees only itself
  sum(p * tape.constant(test::randn({n, n}, 51))).backward();
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) REQUIRE(scores.grad()(i, j) == 0.0);
  require_gradcheck([causal](const Vars& v) { return softmax(masked_fill(v[0], causal, -1e9)); },
                    {test::randn({n, n}, 52)});
  // Batched (2, 4, 4) scores with the (4, 4) mask broadcast over the batch.
  require_gradcheck([causal](const Vars& v) { return softmax(masked_fill(v[0], causal, -1e9)); },
                    {test::randn({2, n, n}, 53)});
}

}  // namespace test_ops_select
