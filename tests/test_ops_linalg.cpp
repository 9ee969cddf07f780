// matmul (2-D, batched, broadcast batch dimensions) against a naive triple loop, its gradients, and
// the axis permutations permute and transpose.
#include <numeric>

#include <xtensor/xbroadcast.hpp>

#include "check.hpp"
#include "engine/engine.hpp"

namespace test_ops_linalg {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::require_gradcheck;
using test::Vars;

namespace {

// The reference product: a and b are first broadcast explicitly to batch + (n, k) and batch + (k, m),
// where `batch` is the expected batch shape written out by the test, then multiplied one batch at a
// time with a triple loop. Shares no code with the engine's BLAS path.
Array naive_matmul(const Array& a, const Array& b, const Shape& batch) {
  const std::size_t ra = a.dimension(), rb = b.dimension();
  const std::size_t n = a.shape(ra - 2), k = a.shape(ra - 1), m = b.shape(rb - 1);
  REQUIRE(b.shape(rb - 2) == k);
  Shape sa = batch, sb = batch, so = batch;
  sa.insert(sa.end(), {n, k});
  sb.insert(sb.end(), {k, m});
  so.insert(so.end(), {n, m});
  const Array A = xt::broadcast(a, sa);
  const Array B = xt::broadcast(b, sb);
  Array C = xt::zeros<Real>(so);
  const std::size_t count = std::accumulate(batch.begin(), batch.end(), std::size_t{1}, std::multiplies<>());
  for (std::size_t t = 0; t < count; ++t)
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < m; ++j) {
        double s = 0.0;
        for (std::size_t l = 0; l < k; ++l) s += A.data()[t * n * k + i * k + l] * B.data()[t * k * m + l * m + j];
        C.data()[t * n * m + i * m + j] = s;
      }
  return C;
}

struct MatmulCase {
  Shape a, b, batch, out;
};

const std::vector<MatmulCase>& matmul_cases() {
  static const std::vector<MatmulCase> cases = {
      {{3, 4}, {4, 5}, {}, {3, 5}},                    // 2-D
      {{1, 4}, {4, 1}, {}, {1, 1}},                    // a dot product
      {{3, 1}, {1, 4}, {}, {3, 4}},                    // an outer product
      {{2, 3, 4}, {2, 4, 5}, {2}, {2, 3, 5}},          // batched 3-D
      {{2, 3, 3, 4}, {2, 3, 4, 2}, {2, 3}, {2, 3, 3, 2}},  // batched 4-D
      {{2, 1, 3, 4}, {5, 4, 2}, {2, 5}, {2, 5, 3, 2}},     // both sides broadcast their batch
      {{3, 4}, {2, 4, 5}, {2}, {2, 3, 5}},             // a 2-D left operand shared by every batch
      {{2, 3, 4}, {4, 5}, {2}, {2, 3, 5}},             // a 2-D right operand (a linear layer)
      {{1, 3, 4}, {2, 4, 5}, {2}, {2, 3, 5}},          // a size-1 batch axis
      {{2, 1, 3, 4}, {1, 3, 4, 2}, {2, 3}, {2, 3, 3, 2}},  // size-1 axes on both sides
  };
  return cases;
}

}  // namespace

TEST_CASE("matmul matches a naive triple loop, including broadcast batch dimensions", "[linalg][matmul]") {
  unsigned seed = 1;
  for (const MatmulCase& c : matmul_cases()) {
    INFO(shape_str(c.a) << " @ " << shape_str(c.b));
    Tape tape;
    const Array a = test::randn(c.a, ++seed), b = test::randn(c.b, ++seed);
    Var y = matmul(tape.leaf(a), tape.leaf(b));
    REQUIRE(y.shape() == c.out);
    REQUIRE(xt::allclose(y.value(), naive_matmul(a, b, c.batch), 0.0, test::tol(1e-12, 1e-5)));
  }
}

TEST_CASE("matmul passes gradcheck for every batch layout", "[linalg][matmul][gradcheck]") {
  unsigned seed = 50;
  for (const MatmulCase& c : matmul_cases()) {
    INFO(shape_str(c.a) << " @ " << shape_str(c.b));
    require_gradcheck([](const Vars& v) { return matmul(v[0], v[1]); },
                      {test::randn(c.a, ++seed), test::randn(c.b, ++seed)});
  }
}

TEST_CASE("matmul's gradients are G B^T and A^T G, summed over a broadcast batch", "[linalg][matmul]") {
  Tape tape;
  const Array av = test::randn({3, 4}, 7), bv = test::randn({2, 4, 5}, 8), w = test::randn({2, 3, 5}, 9);
  Var a = tape.leaf(av), b = tape.leaf(bv);
  sum(matmul(a, b) * tape.constant(w)).backward();
  // dL/dA = sum over the batch of W_t B_t^T; dL/dB_t = A^T W_t.
  Array expected_a = xt::zeros<Real>({3, 4});
  for (std::size_t t = 0; t < 2; ++t)
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t l = 0; l < 4; ++l)
        for (std::size_t j = 0; j < 5; ++j) expected_a(i, l) += w(t, i, j) * bv(t, l, j);
  REQUIRE(xt::allclose(a.grad(), expected_a, 0.0, test::tol(1e-12, 1e-5)));
  Array expected_b = xt::zeros<Real>({2, 4, 5});
  for (std::size_t t = 0; t < 2; ++t)
    for (std::size_t l = 0; l < 4; ++l)
      for (std::size_t j = 0; j < 5; ++j)
        for (std::size_t i = 0; i < 3; ++i) expected_b(t, l, j) += av(i, l) * w(t, i, j);
  REQUIRE(xt::allclose(b.grad(), expected_b, 0.0, test::tol(1e-12, 1e-5)));
}

TEST_CASE("matmul with a shared operand: x x^T, x x, and x on both sides of a chain", "[linalg][matmul][shared]") {
  require_gradcheck([](const Vars& v) { return matmul(v[0], transpose(v[0])); }, {test::randn({3, 4}, 10)});
  require_gradcheck([](const Vars& v) { return matmul(v[0], v[0]); }, {test::randn({2, 3, 3}, 11)});
  require_gradcheck([](const Vars& v) { return matmul(tanh(matmul(v[0], v[1])), transpose(v[0])) + v[0]; },
                    {test::randn({3, 3}, 12), test::randn({3, 3}, 13)});
  // The Gram matrix's gradient by hand.
  Tape tape;
  const Array xv = test::randn({3, 4}, 14);
  Var x = tape.leaf(xv);
  sum(matmul(x, transpose(x))).backward();
  // sum_ij sum_l x_il x_jl = sum_l (sum_i x_il)^2, so d/dx_il = 2 sum_i x_il for every row i.
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t l = 0; l < 4; ++l) {
      double col = 0.0;
      for (std::size_t r = 0; r < 3; ++r) col += xv(r, l);
      REQUIRE(x.grad()(i, l) == Approx(2.0 * col).epsilon(test::tol(1e-12, 1e-5)));
    }
}

TEST_CASE("batched_matmul's transpose flags read the last two axes transposed", "[linalg][matmul]") {
  const Array a = test::randn({2, 4, 3}, 15), b = test::randn({2, 5, 4}, 16);
  const Array at = xt::transpose(a, {0, 2, 1}), bt = xt::transpose(b, {0, 2, 1});
  REQUIRE(xt::allclose(batched_matmul(a, true, b, true), naive_matmul(at, bt, {2}), 0.0, test::tol(1e-12, 1e-5)));
  REQUIRE(xt::allclose(batched_matmul(a, true, bt, false), naive_matmul(at, bt, {2}), 0.0, test::tol(1e-12, 1e-5)));
  REQUIRE(xt::allclose(batched_matmul(at, false, b, true), naive_matmul(at, bt, {2}), 0.0, test::tol(1e-12, 1e-5)));
}

// ---- permute and transpose ----

TEST_CASE("permute reorders axes: out.shape[i] = x.shape[axes[i]]", "[linalg][permute]") {
  Tape tape;
  const Array xv = test::randn({2, 3, 4}, 20);
  Var x = tape.leaf(xv);
  Var y = permute(x, {2, 0, 1});
  REQUIRE(y.shape() == Shape{4, 2, 3});
  Var z = permute(x, {-1, 0, -2});  // the same permutation with negative axes
  REQUIRE(z.value() == y.value());
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t k = 0; k < 4; ++k) REQUIRE(y.value()(k, i, j) == xv(i, j, k));
  // Its gradient is the inverse permutation of the incoming one.
  const Array w = test::randn({4, 2, 3}, 21);
  sum(y * tape.constant(w)).backward();
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t k = 0; k < 4; ++k) REQUIRE(x.grad()(i, j, k) == w(k, i, j));
}

TEST_CASE("permute passes gradcheck for 2-, 3- and 4-D permutations", "[linalg][permute][gradcheck]") {
  require_gradcheck([](const Vars& v) { return permute(v[0], {1, 0}); }, {test::randn({3, 4}, 22)});
  require_gradcheck([](const Vars& v) { return permute(v[0], {2, 0, 1}); }, {test::randn({2, 3, 4}, 23)});
  require_gradcheck([](const Vars& v) { return permute(v[0], {1, 2, 0}); }, {test::randn({2, 3, 4}, 24)});
  require_gradcheck([](const Vars& v) { return permute(v[0], {0, 2, -1, 1}); }, {test::randn({2, 3, 2, 4}, 25)});
  require_gradcheck([](const Vars& v) { return permute(v[0], {0, 1, 2}); }, {test::randn({2, 3, 4}, 26)});
  // A permuted value feeding an op that broadcasts it against the original.
  require_gradcheck([](const Vars& v) { return permute(v[0], {1, 0}) * sum(v[0], {1}); }, {test::randn({3, 3}, 27)});
}

TEST_CASE("transpose swaps two axes, by default the last two", "[linalg][transpose]") {
  Tape tape;
  const Array xv = test::randn({2, 3, 4}, 30);
  Var x = tape.leaf(xv);
  Var last = transpose(x);
  REQUIRE(last.shape() == Shape{2, 4, 3});
  Var outer = transpose(x, 0, 2);
  REQUIRE(outer.shape() == Shape{4, 3, 2});
  REQUIRE(transpose(x, -3, -1).value() == outer.value());
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t k = 0; k < 4; ++k) {
        REQUIRE(last.value()(i, k, j) == xv(i, j, k));
        REQUIRE(outer.value()(k, j, i) == xv(i, j, k));
      }
  REQUIRE(transpose(transpose(x)).value() == xv);
  REQUIRE(transpose(x, 1, 1).value() == xv);  // swapping an axis with itself
}

TEST_CASE("transpose passes gradcheck", "[linalg][transpose][gradcheck]") {
  require_gradcheck([](const Vars& v) { return transpose(v[0]); }, {test::randn({3, 4}, 31)});
  require_gradcheck([](const Vars& v) { return transpose(v[0]); }, {test::randn({2, 3, 4}, 32)});
  require_gradcheck([](const Vars& v) { return transpose(v[0], 0, -1); }, {test::randn({2, 3, 4}, 33)});
  require_gradcheck([](const Vars& v) { return transpose(v[0], 1, 2) * 0.5 + transpose(v[0], 2, 1); },
                    {test::randn({2, 3, 4}, 34)});
  // Attention-shaped: (B, T, H, D) -> (B, H, T, D), then scores Q K^T.
  require_gradcheck([](const Vars& v) {
    Var q = transpose(v[0], 1, 2);
    return matmul(q, transpose(q));
  }, {test::randn({1, 3, 2, 2}, 35)});
}

}  // namespace test_ops_linalg
