// The tape itself: creation order, the reverse sweep, every entry's gradient, hooks, parameters
// across resets, no-grad, and the listing.
#include <malloc.h>

#include "check.hpp"
#include "engine/engine.hpp"
#include "engine/tools/inspect.hpp"

namespace test_tape {  // one namespace per test file: the files compile in groups

using namespace gs;

TEST_CASE("entries are appended in creation order and inputs have smaller indices", "[tape]") {
  Tape tape;
  TapeScope scope(tape);
  Var x = tape.leaf(Array{1.0, 2.0});
  Var y = tanh(x);
  Var z = sum(y * x);
  REQUIRE(tape.size() == 4);
  REQUIRE(x.index() == 0);
  REQUIRE(z.index() == 3);
  for (std::size_t i = 0; i < tape.size(); ++i)
    for (int in : tape.entry(static_cast<int>(i)).inputs) REQUIRE(in < static_cast<int>(i));
  REQUIRE(std::string(tape.entry(2).op) == "mul");
}

TEST_CASE("backward gives every entry on a path its gradient, not only the leaves", "[tape]") {
  Tape tape;
  Var x = tape.leaf(Array{0.3, -0.7});
  Var y = exp(x);          // y = e^x
  Var z = sum(y * y);      // z = sum e^(2x)
  z.backward();
  const Array& v = x.value();
  // dz/dy = 2y, dz/dx = 2 e^(2x)
  REQUIRE(xt::allclose(y.grad(), 2.0 * xt::exp(v)));
  REQUIRE(xt::allclose(x.grad(), 2.0 * xt::exp(2.0 * v)));
  REQUIRE(z.grad()() == 1.0);
}

TEST_CASE("a value used on two paths gets the sum of both gradients", "[tape]") {
  Tape tape;
  Var x = tape.leaf(Array{2.0, -3.0});
  Var z = sum(x * x + exp(x));  // dz/dx = 2x + e^x: x * x alone uses x twice
  z.backward();
  REQUIRE(xt::allclose(x.grad(), 2.0 * x.value() + xt::exp(x.value())));
}

TEST_CASE("an entry off every path from the root gets no gradient", "[tape]") {
  Tape tape;
  Var x = tape.leaf(Array{1.0});
  Var unused = exp(x);
  Var z = sum(x * 3.0);
  z.backward();
  REQUIRE(x.grad()(0) == 3.0);
  REQUIRE_FALSE(unused.entry().has_grad);
  REQUIRE_THROWS_WITH(unused.grad(), Catch::Contains("has no gradient"));
}

TEST_CASE("a non-scalar root takes a seed gradient", "[tape]") {
  Tape tape;
  Var x = tape.leaf(Array{1.0, 2.0, 3.0});
  Var y = x * x;
  y.backward(Array{1.0, 0.0, -1.0});
  REQUIRE(xt::allclose(x.grad(), Array{2.0, 0.0, -6.0}));
}

TEST_CASE("a hook sees the complete gradient and may replace it", "[tape][hooks]") {
  Tape tape;
  Var x = tape.leaf(Array{1.0, 2.0});
  Var h = x * x;                 // used twice below: its gradient is complete only after both uses
  Var z = sum(h * 2.0) + sum(h);  // dz/dh = 3
  Array seen;
  h.register_hook([&](Array& g) {
    seen = g;
    g *= 10.0;  // replace: everything upstream of h now sees 10x
  });
  z.backward();
  REQUIRE(xt::allclose(seen, Array{3.0, 3.0}));
  REQUIRE(xt::allclose(x.grad(), 10.0 * 3.0 * 2.0 * x.value()));
}

TEST_CASE("with keep_contributions, the contributions into an entry sum to its gradient", "[tape][contributions]") {
  Tape tape;
  tape.keep_contributions = true;
  Var x = tape.leaf(test::randn({3, 4}, 1));
  Var branch = tanh(x);
  Var y = x + branch;  // a residual: x reaches y through the identity and through tanh
  Var z = sum(y * y);
  z.backward();
  const Entry& e = x.entry();
  REQUIRE(e.contributions.size() == 2);
  Array total = xt::zeros_like(x.value());
  for (const Contribution& c : e.contributions) total += c.grad;
  REQUIRE(xt::allclose(total, x.grad(), 0.0, 1e-14));
  // One came straight from the add (the skip path), one from tanh (the branch).
  REQUIRE(e.contributions[0].from == y.index());
  REQUIRE(e.contributions[1].from == branch.index());
}

TEST_CASE("parameters persist across tape resets and accumulate until zero_grad", "[tape][parameter]") {
  Parameter w(Array{1.0, -2.0}, "w");
  Tape tape;
  TapeScope scope(tape);
  for (int step = 0; step < 3; ++step) {
    tape.reset();
    Var loss = sum(w * w);  // d/dw = 2w
    loss.backward();
  }
  REQUIRE(xt::allclose(w.grad(), 3.0 * 2.0 * w.value()));
  w.zero_grad();
  REQUIRE(xt::allclose(w.grad(), Array{0.0, 0.0}));
}

TEST_CASE("a parameter used twice in one step is one leaf on the tape", "[tape][parameter]") {
  Parameter w(Array{1.5}, "w");
  Tape tape;
  TapeScope scope(tape);
  Var a = w * 2.0;
  Var b = w + a;
  REQUIRE(Var(w).index() == 0);
  REQUIRE(std::string(tape.entry(0).op) == "param");
  REQUIRE(tape.entry(0).label == "w");
  sum(b).backward();  // b = w + 2w
  REQUIRE(w.grad()(0) == 3.0);
}

TEST_CASE("changing a parameter's value puts a fresh leaf on the tape", "[tape][parameter]") {
  Parameter w(Array{1.0}, "w");
  Tape tape;
  TapeScope scope(tape);
  Var before = w;
  w.value()(0) = 5.0;
  Var after = w;
  REQUIRE(before.index() != after.index());
  REQUIRE(after.value()(0) == 5.0);
}

TEST_CASE("a no-grad scope records values but no gradients", "[tape][nograd]") {
  Tape tape;
  Var x = tape.leaf(Array{1.0});
  Var y;
  {
    NoGradScope no_grad(tape);
    y = exp(x);
  }
  REQUIRE_FALSE(y.requires_grad());
  REQUIRE(y.value()(0) == Approx(std::exp(1.0)));
  REQUIRE(exp(x).requires_grad());  // back on after the scope
}

TEST_CASE("a chain of 100,000 ops runs forward, backward and is destroyed without recursion", "[tape]") {
  Tape tape;
  Var x = tape.leaf(Array{0.5});
  Var y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0;
  sum(y).backward();
  REQUIRE(x.grad()(0) == 1.0);
  REQUIRE(tape.size() == 200002);  // leaf, then a constant and a mul per step, then the sum
  tape.reset();
  REQUIRE(tape.size() == 0);
}

TEST_CASE("reset() frees every value and gradient, and the next step's entries start empty", "[tape]") {
  Tape tape;
  Var x = tape.leaf(xt::ones<Real>({100, 100})).named("x");  // 10,000 values per array of this shape
  Var y = (x * 2.0).named("y");
  int hook_calls = 0;
  y.register_hook([&hook_calls](Array&) { ++hook_calls; });
  tape.keep_contributions = true;
  sum(y).backward();
  REQUIRE(hook_calls == 1);
  const int y_index = y.index();
  [[maybe_unused]] const std::size_t heap_before = mallinfo2().uordblks + mallinfo2().hblkhd;
  tape.reset();
  [[maybe_unused]] const std::size_t heap_after = mallinfo2().uordblks + mallinfo2().hblkhd;
#if !defined(__SANITIZE_ADDRESS__)  // ASan keeps freed memory in quarantine, outside malloc's counts
  INFO("heap in use before reset " << heap_before << " bytes, after " << heap_after);
  REQUIRE(heap_before - heap_after >= 4 * 10000 * sizeof(Real));  // x, y and their two gradients
#endif
  REQUIRE(tape.size() == 0);
  REQUIRE_THROWS_WITH(tape.entry(y_index), Catch::Contains("Tape::entry at test_tape.cpp") && Catch::Contains("not on the tape"));
  REQUIRE_THROWS_WITH(y.value(), Catch::Contains("reset"));

  // The next step reuses the same entries: nothing of the old ones may show through.
  Var a = tape.leaf(Array{1.0, 2.0});
  Var b = tape.leaf(Array{3.0, 4.0}, false);
  Var c = a * b;
  REQUIRE(c.index() == y_index);
  const Entry& e = c.entry();
  REQUIRE(std::string(e.op) == "mul");
  REQUIRE(e.label.empty());
  REQUIRE(e.inputs == std::vector<int>{a.index(), b.index()});
  REQUIRE(e.hooks.empty());
  REQUIRE_FALSE(e.has_grad);
  REQUIRE(e.contributions.empty());
  REQUIRE(tape.entry(b.index()).backward == nullptr);
  sum(c).backward();
  REQUIRE(hook_calls == 1);  // y's hook went with y
  REQUIRE(bool(a.grad() == Array{3.0, 4.0}));
  REQUIRE(tape.entry(c.index()).contributions.size() == 1);  // the sum's alone
}

#if !defined(__SANITIZE_ADDRESS__)
TEST_CASE("training steps with tape resets do not grow memory", "[tape][parameter]") {
  Parameter w(test::randn({32, 32}, 2), "w");
  Tape tape;
  TapeScope scope(tape);
  auto step = [&] {
    tape.reset();
    Var x = tape.constant(test::randn({8, 32}, 3));
    Var loss = mean(tanh(matmul(x, w)) * 2.0);
    loss.backward();
    w.value() -= 0.01 * w.grad();
    w.zero_grad();
  };
  for (int i = 0; i < 20; ++i) step();  // let every buffer reach its steady size
  const std::size_t before = mallinfo2().uordblks;
  for (int i = 0; i < 500; ++i) step();
  const std::size_t after = mallinfo2().uordblks;
  INFO("heap in use before " << before << " bytes, after 500 more steps " << after);
  REQUIRE(after <= before + 4096);
}
#endif

TEST_CASE("the listing has one line per entry with op, label, call site and norms", "[tape][listing]") {
  Tape tape;
  Var x = tape.leaf(Array{3.0, 4.0}).named("x");
  Var y = (x * x).named("y");  // line of this statement appears in the listing
  const int line = __LINE__ - 1;
  sum(y).backward();
  const std::string listing = tape.listing();
  INFO(listing);
  REQUIRE(listing.find("x") != std::string::npos);
  REQUIRE(listing.find("test_tape.cpp:" + std::to_string(line)) != std::string::npos);
  REQUIRE(listing.find("(2,)") != std::string::npos);
  REQUIRE(listing.find(" 5 ") != std::string::npos);  // |x| = 5
  // A header line plus one line per entry.
  REQUIRE(std::count(listing.begin(), listing.end(), '\n') == static_cast<long>(tape.size()) + 1);
}

}  // namespace test_tape
