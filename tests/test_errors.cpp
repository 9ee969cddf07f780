// Every misuse throws gs::Error naming the op, the shapes involved and the user's call site, here
// "test_errors.cpp:<line>". Each test runs the bad call in a lambda on the same line as __LINE__, so
// the expected site is exact. Then anomaly mode: the first NaN/Inf value or gradient throws naming
// the op, its tape index and its site; with the mode off the same NaN/Inf passes silently.
#include <cmath>
#include <string>

#include "check.hpp"
#include "engine/engine.hpp"

namespace test_errors {  // one namespace per test file: the files compile in groups

using namespace gs;
using Catch::Contains;
using Catch::StartsWith;

namespace {

// The message of the gs::Error that f throws; fails the test if f throws nothing.
template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("expected a gs::Error, but nothing was thrown");
  return {};
}

// How a message starts: "<op> at test_errors.cpp:<line>".
std::string at(const std::string& op, int line) { return op + " at test_errors.cpp:" + std::to_string(line); }

}  // namespace

// ---- shapes that do not fit ----

TEST_CASE("add of shapes that do not broadcast", "[errors]") {
  Tape tape;
  Var a = tape.leaf(test::randn({3, 4}, 1)), b = tape.leaf(test::randn({4, 3}, 2));
  const std::string msg = message_of([&] { add(a, b); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("add", line)) && Contains("(3, 4)") && Contains("(4, 3)"));
  // The operator form reports the same site.
  const std::string op = message_of([&] { a + b; }); const int op_line = __LINE__;
  REQUIRE_THAT(op, StartsWith(at("add", op_line)) && Contains("cannot broadcast"));
}

TEST_CASE("mul of shapes that do not broadcast", "[errors]") {
  Tape tape;
  Var a = tape.leaf(test::randn({2, 3}, 3)), b = tape.leaf(test::randn({4}, 4));
  const std::string msg = message_of([&] { a * b; }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("mul", line)) && Contains("(2, 3)") && Contains("(4,)"));
}

TEST_CASE("sub, div and where of shapes that do not broadcast", "[errors]") {
  Tape tape;
  Var a = tape.leaf(test::randn({2, 3}, 5)), b = tape.leaf(test::randn({3, 2}, 6));
  const std::string s = message_of([&] { sub(a, b); }); const int s_line = __LINE__;
  REQUIRE_THAT(s, StartsWith(at("sub", s_line)) && Contains("(2, 3)") && Contains("(3, 2)"));
  const std::string d = message_of([&] { div(a, b); }); const int d_line = __LINE__;
  REQUIRE_THAT(d, StartsWith(at("div", d_line)) && Contains("(2, 3)") && Contains("(3, 2)"));
  const Mask cond = xt::ones<bool>({4});
  const std::string w = message_of([&] { gs::where(cond, a, a); }); const int w_line = __LINE__;
  REQUIRE_THAT(w, StartsWith(at("where", w_line)) && Contains("(4,)") && Contains("(2, 3)"));
}

TEST_CASE("masked_fill with a mask that would enlarge x", "[errors]") {
  Tape tape;
  Var x = tape.leaf(test::randn({4}, 7));
  const Mask mask = xt::ones<bool>({3, 4});
  const std::string msg = message_of([&] { masked_fill(x, mask, 0.0); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("masked_fill", line)) && Contains("(3, 4)") && Contains("(4,)"));
}

TEST_CASE("matmul whose inner dimensions differ", "[errors][matmul]") {
  Tape tape;
  Var a = tape.leaf(test::randn({3, 4}, 8)), b = tape.leaf(test::randn({5, 2}, 9));
  const std::string msg = message_of([&] { matmul(a, b); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("matmul", line)) && Contains("inner dimensions") && Contains("(3, 4) @ (5, 2)"));
}

TEST_CASE("matmul whose batch dimensions do not broadcast", "[errors][matmul]") {
  Tape tape;
  Var a = tape.leaf(test::randn({2, 3, 4}, 10)), b = tape.leaf(test::randn({3, 4, 5}, 11));
  const std::string msg = message_of([&] { matmul(a, b); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith("matmul") && Contains("batch") && Contains("test_errors.cpp:" + std::to_string(line)) &&
                        Contains("(2,)") && Contains("(3,)"));
}

TEST_CASE("matmul of a 1-D operand", "[errors][matmul]") {
  Tape tape;
  Var v = tape.leaf(test::randn({4}, 12)), m = tape.leaf(test::randn({4, 3}, 13));
  const std::string msg = message_of([&] { matmul(v, m); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("matmul", line)) && Contains("at least 2 dimensions") && Contains("(4,) @ (4, 3)"));
}

// ---- axes ----

TEST_CASE("sum, mean and max over an axis that does not exist", "[errors][axes]") {
  Tape tape;
  Var x = tape.leaf(test::randn({3, 4}, 14));
  const std::string s = message_of([&] { sum(x, {2}); }); const int s_line = __LINE__;
  REQUIRE_THAT(s, StartsWith(at("sum", s_line)) && Contains("axis 2") && Contains("(3, 4)"));
  const std::string m = message_of([&] { mean(x, {-3}); }); const int m_line = __LINE__;
  REQUIRE_THAT(m, StartsWith(at("mean", m_line)) && Contains("axis -3") && Contains("(3, 4)"));
  const std::string r = message_of([&] { max(x, {0, -2}); }); const int r_line = __LINE__;
  REQUIRE_THAT(r, StartsWith(at("max", r_line)) && Contains("repeated") && Contains("(3, 4)"));
}

TEST_CASE("softmax and log_softmax along an axis that does not exist", "[errors][axes]") {
  Tape tape;
  Var x = tape.leaf(test::randn({3, 4}, 15));
  const std::string s = message_of([&] { softmax(x, 2); }); const int s_line = __LINE__;
  REQUIRE_THAT(s, StartsWith(at("softmax", s_line)) && Contains("axis 2") && Contains("(3, 4)"));
  const std::string l = message_of([&] { log_softmax(x, -3); }); const int l_line = __LINE__;
  REQUIRE_THAT(l, StartsWith(at("log_softmax", l_line)) && Contains("axis -3") && Contains("(3, 4)"));
  Var scalar = tape.leaf(Array(1.0));
  const std::string z = message_of([&] { softmax(scalar); }); const int z_line = __LINE__;
  REQUIRE_THAT(z, StartsWith(at("softmax", z_line)) && Contains("()"));
}

TEST_CASE("slice along an axis that does not exist, or out of its range", "[errors][axes]") {
  Tape tape;
  Var x = tape.leaf(test::randn({3, 4}, 16));
  const std::string a = message_of([&] { slice(x, 2, 0, 1); }); const int a_line = __LINE__;
  REQUIRE_THAT(a, StartsWith(at("slice", a_line)) && Contains("axis 2") && Contains("(3, 4)"));
  const std::string r = message_of([&] { slice(x, 1, 2, 5); }); const int r_line = __LINE__;
  REQUIRE_THAT(r, StartsWith(at("slice", r_line)) && Contains("[2, 5)") && Contains("(3, 4)"));
  const std::string b = message_of([&] { slice(x, 0, 2, 1); }); const int b_line = __LINE__;
  REQUIRE_THAT(b, StartsWith(at("slice", b_line)) && Contains("[2, 1)"));
}

TEST_CASE("transpose of an axis that does not exist", "[errors][axes]") {
  Tape tape;
  Var x = tape.leaf(test::randn({2, 3, 4}, 17));
  const std::string msg = message_of([&] { transpose(x, 0, 3); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("transpose", line)) && Contains("axis 3") && Contains("(2, 3, 4)"));
  Var v = tape.leaf(test::randn({4}, 18));
  const std::string one = message_of([&] { transpose(v); }); const int one_line = __LINE__;  // default -2, -1
  REQUIRE_THAT(one, StartsWith(at("transpose", one_line)) && Contains("axis -2") && Contains("(4,)"));
}

TEST_CASE("permute with the wrong number of axes, a repeated axis or one out of range", "[errors][axes]") {
  Tape tape;
  Var x = tape.leaf(test::randn({2, 3, 4}, 19));
  const std::string n = message_of([&] { permute(x, {0, 1}); }); const int n_line = __LINE__;
  REQUIRE_THAT(n, StartsWith(at("permute", n_line)) && Contains("needs 3 axes") && Contains("(2, 3, 4)") &&
                      Contains("got 2"));
  const std::string r = message_of([&] { permute(x, {0, 0, 1}); }); const int r_line = __LINE__;
  REQUIRE_THAT(r, StartsWith(at("permute", r_line)) && Contains("repeated") && Contains("(2, 3, 4)"));
  const std::string o = message_of([&] { permute(x, {0, 1, 3}); }); const int o_line = __LINE__;
  REQUIRE_THAT(o, StartsWith(at("permute", o_line)) && Contains("axis 3") && Contains("(2, 3, 4)"));
}

TEST_CASE("concat along an axis that does not exist, or of shapes that differ off the axis", "[errors][axes]") {
  Tape tape;
  Var a = tape.leaf(test::randn({3, 4}, 20)), b = tape.leaf(test::randn({2, 4}, 21));
  const std::string x = message_of([&] { concat({a, a}, 2); }); const int x_line = __LINE__;
  REQUIRE_THAT(x, StartsWith(at("concat", x_line)) && Contains("axis 2") && Contains("(3, 4)"));
  const std::string d = message_of([&] { concat({a, b}, 1); }); const int d_line = __LINE__;
  REQUIRE_THAT(d, StartsWith(at("concat", d_line)) && Contains("(3, 4)") && Contains("(2, 4)") &&
                      Contains("differ off axis 1"));
  Var c = tape.leaf(test::randn({3, 4, 1}, 22));
  const std::string r = message_of([&] { concat({a, c}, 0); }); const int r_line = __LINE__;
  REQUIRE_THAT(r, StartsWith(at("concat", r_line)) && Contains("(3, 4)") && Contains("(3, 4, 1)"));
  const std::string e = message_of([&] { concat({}, 0); }); const int e_line = __LINE__;
  REQUIRE_THAT(e, StartsWith(at("concat", e_line)) && Contains("at least one input"));
}

TEST_CASE("split into sizes that do not add up to the axis", "[errors][axes]") {
  Tape tape;
  Var x = tape.leaf(test::randn({3, 4}, 23));
  const std::string msg = message_of([&] { split(x, 1, {1, 2}); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("split", line)) && Contains("add up to 3") && Contains("(3, 4)"));
  const std::string ax = message_of([&] { split(x, -3, {3}); }); const int ax_line = __LINE__;
  REQUIRE_THAT(ax, StartsWith(at("split", ax_line)) && Contains("axis -3") && Contains("(3, 4)"));
}

TEST_CASE("reshape to a different number of elements", "[errors][reshape]") {
  Tape tape;
  Var x = tape.leaf(test::randn({3, 4}, 24));
  const std::string msg = message_of([&] { reshape(x, {5, 2}); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("reshape", line)) && Contains("(3, 4)") && Contains("12 elements") &&
                        Contains("(5, 2)"));
  const std::string inferred = message_of([&] { reshape(x, {5, -1}); }); const int i_line = __LINE__;
  REQUIRE_THAT(inferred, StartsWith(at("reshape", i_line)) && Contains("(3, 4)") && Contains("12 elements"));
  const std::string two = message_of([&] { reshape(x, {-1, -1}); }); const int t_line = __LINE__;
  REQUIRE_THAT(two, StartsWith(at("reshape", t_line)) && Contains("only one -1"));
}

// ---- ids and targets ----

TEST_CASE("gather_rows with an id outside the table", "[errors][gather]") {
  Tape tape;
  Var table = tape.leaf(test::randn({4, 3}, 25));
  const std::string msg = message_of([&] { gather_rows(table, IndexArray{0, 4, 1}); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("gather_rows", line)) && Contains("id 4") && Contains("(4, 3)"));
  const std::string neg = message_of([&] { gather_rows(table, IndexArray{-1}); }); const int n_line = __LINE__;
  REQUIRE_THAT(neg, StartsWith(at("gather_rows", n_line)) && Contains("id -1") && Contains("(4, 3)"));
  Var scalar = tape.leaf(Array(1.0));
  const std::string z = message_of([&] { gather_rows(scalar, IndexArray{0}); }); const int z_line = __LINE__;
  REQUIRE_THAT(z, StartsWith(at("gather_rows", z_line)) && Contains("0-d"));
}

TEST_CASE("cross_entropy with a target outside the classes", "[errors][cross_entropy]") {
  Tape tape;
  Var logits = tape.leaf(test::randn({3, 4}, 26));
  const std::string msg = message_of([&] { cross_entropy(logits, IndexArray{0, 4, 1}); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("cross_entropy", line)) && Contains("target 4") && Contains("[0, 4)") &&
                        Contains("(3, 4)"));
  const std::string neg = message_of([&] { cross_entropy(logits, IndexArray{0, -1, 1}); }); const int n_line = __LINE__;
  REQUIRE_THAT(neg, StartsWith(at("cross_entropy", n_line)) && Contains("target -1") && Contains("(3, 4)"));
}

TEST_CASE("cross_entropy with targets of the wrong shape", "[errors][cross_entropy]") {
  Tape tape;
  Var logits = tape.leaf(test::randn({3, 4}, 27));
  const std::string msg = message_of([&] { cross_entropy(logits, IndexArray{0, 1, 2, 3}); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("cross_entropy", line)) && Contains("(3, 4)") && Contains("got (4,)"));
  const IndexArray column = IndexArray::from_shape({3, 1});
  const std::string col = message_of([&] { cross_entropy(logits, column); }); const int c_line = __LINE__;
  REQUIRE_THAT(col, StartsWith(at("cross_entropy", c_line)) && Contains("(3, 4)") && Contains("got (3, 1)"));
}

// ---- backward ----

TEST_CASE("backward from a non-scalar without a seed", "[errors][backward]") {
  Tape tape;
  Var x = tape.leaf(test::randn({3, 4}, 28));
  Var y = tanh(x);
  const std::string msg = message_of([&] { y.backward(); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("backward", line)) && Contains("(3, 4)") && Contains("seed"));
}

TEST_CASE("backward with a seed of the wrong shape", "[errors][backward]") {
  Tape tape;
  Var x = tape.leaf(test::randn({3, 4}, 29));
  Var y = x * 2.0;
  const std::string msg = message_of([&] { y.backward(Array{1.0, 2.0, 3.0, 4.0}); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("backward", line)) && Contains("seed gradient has shape (4,)") &&
                        Contains("root has shape (3, 4)"));
}

TEST_CASE("backward from a root that needs no gradient", "[errors][backward]") {
  Tape tape;
  Var c = tape.constant(test::randn({2}, 30));
  Var y = sum(c * c);
  const std::string msg = message_of([&] { y.backward(); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("backward", line)) && Contains("does not require a gradient") && Contains("sum"));
}

TEST_CASE("backward on a tape that was reset: a stale Var", "[errors][stale]") {
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.leaf(test::randn({2, 2}, 31));
  Var loss = sum(x * x);
  tape.reset();
  Var fresh = tape.leaf(test::randn({2, 2}, 32));  // the new generation reuses tape index 0
  Var more = sum(fresh * fresh);                    // and has an entry at loss's old index
  REQUIRE(more.index() >= loss.index());
  const std::string msg = message_of([&] { loss.backward(); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("backward", line)) && Contains("reset") &&
                        Contains("tape index " + std::to_string(loss.index())));
  const std::string val = message_of([&] { x.value(); }); const int v_line = __LINE__;
  REQUIRE_THAT(val, StartsWith(at("Var", v_line)) && Contains("reset"));
  const std::string op = message_of([&] { add(x, fresh); }); const int o_line = __LINE__;
  REQUIRE_THAT(op, Contains("test_errors.cpp:" + std::to_string(o_line)) && Contains("reset"));
}

TEST_CASE("a custom op recorded with a stale Var", "[errors][stale]") {
  // Regression: Tape::record checked its inputs against the tape's current generation instead of
  // the Var's own, so a stale handle whose index existed again silently read the new entry.
  Tape tape;
  Var old = tape.leaf(Array{1.0});
  tape.reset();
  Var fresh = tape.leaf(Array{2.0});
  REQUIRE(fresh.index() == old.index());
  const std::string msg = message_of([&] {
    tape.record("custom", {old}, Array{0.0}, nullptr, Site::current()); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("custom", line)) && Contains("reset"));
}

TEST_CASE("Var::grad of a value that does not require a gradient", "[errors][grad]") {
  Tape tape;
  Var c = tape.constant(Array{1.0, 2.0});
  Var x = tape.leaf(Array{3.0, 4.0});
  sum(c * x).backward();
  const std::string msg = message_of([&] { c.grad(); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("grad", line)) && Contains("op const") && Contains("does not require a gradient"));
  Var frozen = tape.leaf(Array{5.0}, false);
  const std::string leaf = message_of([&] { frozen.grad(); }); const int l_line = __LINE__;
  REQUIRE_THAT(leaf, StartsWith(at("grad", l_line)) && Contains("op leaf") && Contains("does not require"));
}

TEST_CASE("using an empty Var", "[errors][empty]") {
  Tape tape;
  Var empty;
  Var x = tape.leaf(Array{1.0});
  const std::string v = message_of([&] { empty.value(); }); const int v_line = __LINE__;
  REQUIRE_THAT(v, StartsWith(at("Var", v_line)) && Contains("empty"));
  const std::string op = message_of([&] { add(x, empty); }); const int o_line = __LINE__;
  REQUIRE_THAT(op, Contains("test_errors.cpp:" + std::to_string(o_line)) && Contains("empty"));
  const std::string b = message_of([&] { empty.backward(); }); const int b_line = __LINE__;
  REQUIRE_THAT(b, Contains("test_errors.cpp:" + std::to_string(b_line)) && Contains("empty"));
  const std::string s = message_of([&] { empty.shape(); }); const int s_line = __LINE__;
  REQUIRE_THAT(s, StartsWith(at("Var", s_line)) && Contains("empty"));
}

TEST_CASE("an op mixing values from two tapes", "[errors][tapes]") {
  Tape one, two;
  Var a = one.leaf(test::randn({2, 3}, 33));
  Var b = two.leaf(test::randn({2, 3}, 34));
  const std::string msg = message_of([&] { add(a, b); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("add", line)) && Contains("different tapes"));
  const std::string mm = message_of([&] { matmul(a, transpose(b)); }); const int mm_line = __LINE__;
  REQUIRE_THAT(mm, StartsWith(at("matmul", mm_line)) && Contains("different tapes"));
  const std::string cat = message_of([&] { concat({a, b}, 0); }); const int c_line = __LINE__;
  REQUIRE_THAT(cat, StartsWith(at("concat", c_line)) && Contains("different tapes"));
}

TEST_CASE("a hook that changes the gradient's shape", "[errors][hooks]") {
  Tape tape;
  Var x = tape.leaf(Array{1.0, 2.0, 3.0, 4.0});
  Var h = x * x; const int h_line = __LINE__;  // the error names the entry's own site
  h.register_hook([](Array& g) { g = xt::zeros<Real>({2, 2}); });
  Var loss = sum(h);
  const std::string msg = message_of([&] { loss.backward(); });
  REQUIRE_THAT(msg, StartsWith(at("mul", h_line)) && Contains("hook") && Contains("(2, 2)") && Contains("(4,)"));
}

TEST_CASE("a custom backward that returns the wrong number or shape of gradients", "[errors][custom]") {
  Tape tape;
  Var a = tape.leaf(Array{1.0, 2.0, 3.0}), b = tape.leaf(Array{4.0, 5.0, 6.0});
  Var count = tape.record("too_few", {a, b}, a.value() + b.value(),
                          [](const BackwardArgs& g) -> Grads { return {g.grad}; }, Site::current());
  const int count_line = __LINE__ - 1;
  const std::string c = message_of([&] { sum(count).backward(); });
  REQUIRE_THAT(c, StartsWith(at("too_few", count_line)) && Contains("1 gradients for 2 inputs"));
  Var shape = tape.record("bad_shape", {a}, a.value(),
                          [](const BackwardArgs&) -> Grads { return {Array(xt::ones<Real>({5}))}; }, Site::current());
  const int shape_line = __LINE__ - 1;
  const std::string s = message_of([&] { sum(shape).backward(); });
  REQUIRE_THAT(s, StartsWith(at("bad_shape", shape_line)) && Contains("(5,)") && Contains("(3,)"));
}

// ---- anomaly mode ----

TEST_CASE("anomaly mode: log of a negative number throws naming log, its tape index and its site",
          "[errors][anomaly]") {
  Tape tape;
  tape.anomaly_mode = true;
  Var x = tape.leaf(Array{1.0, -2.0, 3.0});
  const std::string msg = message_of([&] { log(x); }); const int line = __LINE__;
  REQUIRE_THAT(msg, StartsWith(at("log", line)) && Contains("anomaly") && Contains("tape index 1") &&
                        Contains("(3,)"));
  REQUIRE(tape.size() == 1);  // the bad entry never went onto the tape
}

TEST_CASE("anomaly mode off: log of a negative number is NaN, silently", "[errors][anomaly]") {
  Tape tape;
  Var x = tape.leaf(Array{1.0, -2.0, 3.0});
  Var y = log(x);
  REQUIRE(y.value()(0) == 0.0);
  REQUIRE(std::isnan(y.value()(1)));
  sum(y).backward();  // and the NaN flows on into the loss, unnoticed
  REQUIRE(x.grad()(1) == -0.5);
}

TEST_CASE("anomaly mode: a backward that produces Inf throws naming the op (sqrt at 0)", "[errors][anomaly]") {
  Tape tape;
  tape.anomaly_mode = true;
  Var x = tape.leaf(Array{0.0, 1.0, 4.0});
  Var y = sqrt(x); const int line = __LINE__;  // forward is fine: sqrt(0) = 0
  REQUIRE(y.value()(0) == 0.0);
  Var loss = sum(y);
  // dy/dx = 0.5 / sqrt(x) = 0.5 / 0 = inf at x = 0.
  const std::string msg = message_of([&] { loss.backward(); });
  REQUIRE_THAT(msg, StartsWith(at("sqrt", line)) && Contains("anomaly") && Contains("backward of tape index " +
                                                                                      std::to_string(y.index())) &&
                        Contains("NaN or Inf gradient"));
}

TEST_CASE("anomaly mode off: the gradient of sqrt at 0 is Inf, silently", "[errors][anomaly]") {
  Tape tape;
  Var x = tape.leaf(Array{0.0, 1.0, 4.0});
  Var loss = sum(sqrt(x));
  loss.backward();
  REQUIRE(std::isinf(x.grad()(0)));
  REQUIRE(x.grad()(1) == 0.5);
  REQUIRE(x.grad()(2) == 0.25);
}

TEST_CASE("anomaly mode: overflow and 0/0 in other ops are caught where they happen", "[errors][anomaly]") {
  Tape tape;
  tape.anomaly_mode = true;
  Var x = tape.leaf(Array{1.0, 1000.0});
  const std::string e = message_of([&] { exp(x); }); const int e_line = __LINE__;
  REQUIRE_THAT(e, StartsWith(at("exp", e_line)) && Contains("NaN or Inf"));
  Var z = tape.leaf(Array{0.0, 1.0});
  const std::string d = message_of([&] { z / z; }); const int d_line = __LINE__;
  REQUIRE_THAT(d, StartsWith(at("div", d_line)) && Contains("NaN or Inf"));
  // With the mode off, the same two produce Inf and NaN without a word.
  tape.anomaly_mode = false;
  REQUIRE(std::isinf(exp(x).value()(1)));
  REQUIRE(std::isnan((z / z).value()(0)));
}

}  // namespace test_errors
