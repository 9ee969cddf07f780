// Ops that move values: reshape, slice, concat, split and gather_rows (the embedding lookup), their
// values and their gradients (which move the gradient back the same way; gather scatter-adds).
#include "check.hpp"
#include "engine/engine.hpp"

namespace test_ops_shape {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::require_gradcheck;
using test::Vars;

// ---- reshape ----

TEST_CASE("reshape keeps the row-major order of the values and infers one -1", "[shape][reshape]") {
  Tape tape;
  const Array xv = test::randn({3, 4}, 1);
  Var x = tape.leaf(xv);
  struct Case {
    std::vector<long> to;
    Shape expected;
  };
  const std::vector<Case> cases = {
      {{2, 6}, {2, 6}},       {{-1}, {12}},           {{12}, {12}},         {{-1, 4}, {3, 4}},
      {{2, -1, 3}, {2, 2, 3}}, {{1, 12, 1}, {1, 12, 1}}, {{4, -1}, {4, 3}},   {{-1, 1, 2}, {6, 1, 2}},
  };
  for (const Case& c : cases) {
    Var y = reshape(x, c.to);
    INFO("to " << shape_str(c.expected));
    REQUIRE(y.shape() == c.expected);
    for (std::size_t i = 0; i < xv.size(); ++i) REQUIRE(y.value().data()[i] == xv.data()[i]);
  }
  Var one = tape.leaf(xt::ones<Real>({1, 1}) * 2.5);
  Var scalar = reshape(one, {});
  REQUIRE(scalar.shape() == Shape{});
  REQUIRE(scalar.value()() == 2.5);
  REQUIRE(reshape(scalar, {-1, 1}).shape() == Shape{1, 1});
}

TEST_CASE("reshape to a shape whose element count overflows throws, naming the shapes and the site",
          "[shape][reshape][errors]") {
  // Regression: 4 * (2^62 + 1) wraps to 4 in 64 bits, so (4,) "reshaped" to (4, 2^62 + 1) passed the
  // count check and the next read went far past the four elements (a segfault).
  Tape tape;
  Var x = tape.leaf(Array{1.0, 2.0, 3.0, 4.0});
  const long huge = (1L << 62) + 1;
  const int line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(reshape(x, {4, huge}), Catch::StartsWith("reshape at test_ops_shape.cpp:" + std::to_string(line)) &&
                                                 Catch::Contains("(4,)") && Catch::Contains("overflows"));
  REQUIRE_THROWS_WITH(reshape(x, {-1, huge, 4}), Catch::Contains("overflows"));
  REQUIRE_THROWS_WITH(reshape(x, {1L << 32, 1L << 32}), Catch::Contains("overflows"));  // wraps to 0
  REQUIRE(reshape(x, {2, -1}).shape() == Shape{2, 2});
}

TEST_CASE("reshape passes gradcheck, and its gradient has the input's shape", "[shape][reshape][gradcheck]") {
  require_gradcheck([](const Vars& v) { return reshape(v[0], {2, 6}); }, {test::randn({3, 4}, 2)});
  require_gradcheck([](const Vars& v) { return reshape(v[0], {-1}); }, {test::randn({3, 4}, 3)});
  require_gradcheck([](const Vars& v) { return reshape(v[0], {2, -1, 3}); }, {test::randn({3, 4}, 4)});
  // A reshaped value meeting the original under broadcasting: (3, 4) -> (4, 3) -> (12,) -> (3, 4).
  require_gradcheck([](const Vars& v) {
    Var t = reshape(v[0], {4, 3});
    return reshape(tanh(t), {-1, 4}) * v[0] + reshape(reshape(v[0], {-1}), {3, -1});
  }, {test::randn({3, 4}, 5)});
  Tape tape;
  Var x = tape.leaf(test::randn({2, 3}, 6));
  sum(reshape(x, {-1}) * 2.0).backward();
  REQUIRE(x.grad().shape() == x.value().shape());
  REQUIRE(xt::allclose(x.grad(), xt::ones<Real>({2, 3}) * 2.0));
}

// ---- slice ----

TEST_CASE("slice takes start:stop along one axis", "[shape][slice]") {
  Tape tape;
  const Array xv = test::randn({3, 4, 5}, 10);
  Var x = tape.leaf(xv);
  Var a = slice(x, 0, 1, 3);
  REQUIRE(a.shape() == Shape{2, 4, 5});
  Var b = slice(x, 1, 2, 3);
  REQUIRE(b.shape() == Shape{3, 1, 5});
  Var c = slice(x, -1, 1, 4);
  REQUIRE(c.shape() == Shape{3, 4, 3});
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j)
      for (std::size_t k = 0; k < 5; ++k) {
        if (i >= 1) REQUIRE(a.value()(i - 1, j, k) == xv(i, j, k));
        if (j == 2) REQUIRE(b.value()(i, 0, k) == xv(i, j, k));
        if (k >= 1 && k < 4) REQUIRE(c.value()(i, j, k - 1) == xv(i, j, k));
      }
  REQUIRE(slice(x, 2, 0, 5).value() == xv);  // the whole axis
  REQUIRE(slice(x, 1, 2, 2).shape() == Shape{3, 0, 5});  // empty
}

TEST_CASE("slice's gradient goes back into the sliced positions, zeros elsewhere", "[shape][slice][gradcheck]") {
  require_gradcheck([](const Vars& v) { return slice(v[0], 0, 1, 3); }, {test::randn({3, 4}, 11)});
  require_gradcheck([](const Vars& v) { return slice(v[0], -1, 1, 3); }, {test::randn({2, 3, 4}, 12)});
  require_gradcheck([](const Vars& v) { return slice(v[0], 1, 0, 1); }, {test::randn({2, 3, 4}, 13)});
  // Overlapping slices of one value: the middle elements get both gradients.
  require_gradcheck([](const Vars& v) { return slice(v[0], 1, 0, 3) * slice(v[0], 1, 1, 4); },
                    {test::randn({2, 4}, 14)});
  // An empty slice contributes nothing.
  require_gradcheck([](const Vars& v) { return sum(slice(v[0], 0, 2, 2)) + sum(v[0] * v[0]); },
                    {test::randn({3, 2}, 15)});
  Tape tape;
  Var x = tape.leaf(test::randn({2, 5}, 16));
  sum(slice(x, 1, 1, 4)).backward();
  REQUIRE(x.grad() == Array{{0.0, 1.0, 1.0, 1.0, 0.0}, {0.0, 1.0, 1.0, 1.0, 0.0}});
}

// ---- concat ----

TEST_CASE("concat joins along an axis", "[shape][concat]") {
  Tape tape;
  const Array av = test::randn({2, 3}, 20), bv = test::randn({2, 1}, 21), cv = test::randn({2, 2}, 22);
  Var a = tape.leaf(av), b = tape.leaf(bv), c = tape.leaf(cv);
  Var y = concat({a, b, c}, 1);
  REQUIRE(y.shape() == Shape{2, 6});
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 3; ++j) REQUIRE(y.value()(i, j) == av(i, j));
    REQUIRE(y.value()(i, 3) == bv(i, 0));
    for (std::size_t j = 0; j < 2; ++j) REQUIRE(y.value()(i, 4 + j) == cv(i, j));
  }
  Var z = concat({a, a}, -2);
  REQUIRE(z.shape() == Shape{4, 3});
  REQUIRE(xt::allclose(slice(z, 0, 2, 4).value(), av));
  REQUIRE(concat({a}, 0).value() == av);
}

TEST_CASE("concat passes gradcheck; each input gets its own stretch of the gradient", "[shape][concat][gradcheck]") {
  require_gradcheck([](const Vars& v) { return concat({v[0], v[1]}, 0); },
                    {test::randn({2, 3}, 23), test::randn({1, 3}, 24)});
  require_gradcheck([](const Vars& v) { return concat({v[0], v[1], v[2]}, -1); },
                    {test::randn({2, 2, 1}, 25), test::randn({2, 2, 3}, 26), test::randn({2, 2, 2}, 27)});
  require_gradcheck([](const Vars& v) { return concat({v[0], v[1]}, 1); },
                    {test::randn({2, 3, 2}, 28), test::randn({2, 1, 2}, 29)});
  // The same value twice, and once through another op: its gradient sums all three stretches.
  require_gradcheck([](const Vars& v) { return concat({v[0], tanh(v[0]), v[0]}, 0); }, {test::randn({2, 3}, 30)});
  Tape tape;
  Var x = tape.leaf(test::randn({2, 2}, 31));
  Var w = tape.constant(Array{{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}, {7.0, 8.0}});
  sum(concat({x, x}, 0) * w).backward();
  REQUIRE(x.grad() == Array{{6.0, 8.0}, {10.0, 12.0}});
}

// ---- split ----

TEST_CASE("split cuts an axis into consecutive pieces", "[shape][split]") {
  Tape tape;
  const Array xv = test::randn({2, 6}, 40);
  Var x = tape.leaf(xv);
  std::vector<Var> pieces = split(x, -1, {1, 3, 2});
  REQUIRE(pieces.size() == 3);
  REQUIRE(pieces[0].shape() == Shape{2, 1});
  REQUIRE(pieces[1].shape() == Shape{2, 3});
  REQUIRE(pieces[2].shape() == Shape{2, 2});
  for (std::size_t i = 0; i < 2; ++i) {
    REQUIRE(pieces[0].value()(i, 0) == xv(i, 0));
    for (std::size_t j = 0; j < 3; ++j) REQUIRE(pieces[1].value()(i, j) == xv(i, 1 + j));
    for (std::size_t j = 0; j < 2; ++j) REQUIRE(pieces[2].value()(i, j) == xv(i, 4 + j));
  }
  // concat undoes split; the round trip's gradient is all ones.
  Var back = concat(pieces, 1);
  REQUIRE(back.value() == xv);
  sum(back).backward();
  REQUIRE(x.grad() == xt::ones<Real>({2, 6}));
  REQUIRE(split(x, 0, {2}).size() == 1);
  REQUIRE(split(x, 1, {0, 6})[0].shape() == Shape{2, 0});
}

TEST_CASE("split passes gradcheck with pieces used differently", "[shape][split][gradcheck]") {
  require_gradcheck([](const Vars& v) {
    std::vector<Var> p = split(v[0], 1, {1, 2, 1});
    return p[0] * tanh(p[2]) + sum(p[1], {1}, true);  // pieces (3, 1), (3, 2), (3, 1)
  }, {test::randn({3, 4}, 41)});
  require_gradcheck([](const Vars& v) {
    std::vector<Var> p = split(v[0], 0, {2, 1});  // the q/k split of a fused projection, along rows
    return matmul(transpose(p[0]), concat({p[1], p[1]}, 0));
  }, {test::randn({3, 4}, 42)});
  // A piece unused: its stretch of the gradient is zero.
  require_gradcheck([](const Vars& v) { return split(v[0], -1, {2, 2})[1] * 3.0; }, {test::randn({2, 4}, 43)});
}

// ---- gather_rows ----

TEST_CASE("gather_rows picks rows of the table", "[shape][gather]") {
  Tape tape;
  const Array table = test::randn({4, 3}, 50);
  Var t = tape.leaf(table);
  const IndexArray ids = {2, 0, 2, 3};
  Var y = gather_rows(t, ids);
  REQUIRE(y.shape() == Shape{4, 3});
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 3; ++j) REQUIRE(y.value()(i, j) == table(static_cast<std::size_t>(ids(i)), j));
  // 2-D ids (batch, time) give (batch, time, d).
  const IndexArray ids2 = {{1, 1, 0}, {3, 2, 1}};
  Var z = gather_rows(t, ids2);
  REQUIRE(z.shape() == Shape{2, 3, 3});
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t s = 0; s < 3; ++s)
      for (std::size_t j = 0; j < 3; ++j) REQUIRE(z.value()(b, s, j) == table(static_cast<std::size_t>(ids2(b, s)), j));
  // A 1-D table gives ids' shape; a 0-d id drops the row axis.
  Var v = tape.leaf(Array{10.0, 20.0, 30.0});
  REQUIRE(gather_rows(v, IndexArray{2, 2, 0}).value() == Array{30.0, 30.0, 10.0});
  const IndexArray one_id = 3;
  Var row = gather_rows(t, one_id);
  REQUIRE(row.shape() == Shape{3});
  for (std::size_t j = 0; j < 3; ++j) REQUIRE(row.value()(j) == table(3, j));
}

TEST_CASE("gather_rows scatter-adds the gradient of repeated ids", "[shape][gather][gradcheck]") {
  Tape tape;
  Var t = tape.leaf(test::randn({4, 3}, 51));
  const IndexArray ids = {{2, 0, 2}, {2, 3, 0}};  // row 2 three times, row 0 twice, row 1 never
  sum(gather_rows(t, ids)).backward();
  const Array counts = {2.0, 0.0, 3.0, 1.0};
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t j = 0; j < 3; ++j) REQUIRE(t.grad()(r, j) == counts(r));

  require_gradcheck([ids](const Vars& v) { return gather_rows(v[0], ids); }, {test::randn({4, 3}, 52)});
  require_gradcheck([](const Vars& v) { return gather_rows(v[0], IndexArray{1, 1, 1, 0}); },
                    {test::randn({2, 2, 3}, 53)});
  require_gradcheck([](const Vars& v) { return gather_rows(v[0], IndexArray{4, 0, 4}); }, {test::randn({5}, 54)});
  // Gathered rows combined with the table itself: the table gets a gather path and a direct path.
  require_gradcheck([ids](const Vars& v) { return tanh(gather_rows(v[0], ids)) * sum(v[0], {0}); },
                    {test::randn({4, 3}, 55)});
}

}  // namespace test_ops_shape
