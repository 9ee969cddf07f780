// tape_demo: the engine at a glance. A tiny two-layer network on four points, one forward and one
// backward pass; prints the tape (every entry with its value and gradient norms), the parameters'
// gradients, and a finite-difference check of those gradients.
//
//   build/bin/tape_demo            (scripts/demo builds and runs it)
//
// The listing names every entry's call site, tape_demo.cpp:72 to :76. docs/engine.md quotes the
// listing and a test (docs.engine_md_quotes_tape_demo) checks the quote, so the forward pass below
// stays on those lines.
#include <cmath>
#include <cstdio>

#include "engine/engine.hpp"
#include "engine/tools/gradcheck.hpp"
#include "explorer/dot.hpp"
#include "experiments/lib/graph.hpp"
#include "experiments/lib/harness.hpp"

using namespace gs;

namespace {

// The gradients again, by central finite differences of the same loss; `values` are w1, b1, w2, b2
// and the points.
GradcheckResult check_by_differences(const std::vector<Array>& values, const Array& targets) {
  return gradcheck(
      [&](const std::vector<Var>& v) {
        Var hh = tanh(matmul(v[4], v[0]) + v[1]);
        Var e = matmul(hh, v[2]) + v[3] - Tape::current().constant(targets);
        return mean(e * e);
      },
      values);
}

// One SGD step moves every parameter against its gradient; returns the loss after it.
double loss_after_sgd_step(Parameter& w1, Parameter& b1, Parameter& w2, Parameter& b2, double lr, const Array& points,
                           const Array& targets) {
  for (Parameter* p : {&w1, &b1, &w2, &b2}) p->value() -= lr * p->grad();
  Tape& tape = Tape::current();
  tape.reset();
  Var h2 = tanh(matmul(tape.constant(points), w1) + b1);
  Var e2 = matmul(h2, w2) + b2 - tape.constant(targets);
  return mean(e2 * e2).value()();
}

}  // namespace

int main(int argc, char** argv) {
  experiments::Experiment ex("tape_demo",
                             "tape_demo: one forward and backward pass of a tiny network, with its tape listing");
  double lr = 0.1;
  experiments::add_flag(ex.app, "--lr", lr, "learning rate of the one SGD step shown at the end", experiments::RealRange::above(0));
  std::string graph;
  experiments::add_flag(ex.app, "--graph", graph, "also draw the tape, with the gradient norm on every edge, into this "
                        "file: .svg or .png (needs Graphviz's dot), else DOT text");
  ex.add_overwrite_flag();
  return ex.main(argc, argv, [&] {
    if (!graph.empty()) experiments::check_graph_file(graph, ex.html.overwrite);  // before any work. Four points in 2-D, their targets:
    Array points = {{0.0, 1.0}, {1.0, 0.0}, {1.0, 1.0}, {0.5, -0.5}};  // (N, 2)
    Array targets = Array{1.0, 1.0, 0.0, 0.5};
    targets.reshape({4, 1});                                             // (N, 1)

    // y = tanh(x W1 + b1) W2 + b2, with fixed small weights so every run prints the same numbers.
    Parameter w1(Array{{0.5, -0.3, 0.8}, {0.2, 0.7, -0.6}}, "w1");  // (2, 3)
    Parameter b1(Array{0.1, 0.0, -0.1}, "b1");                      // (3,)
    Array w2_init = Array{0.4, -0.9, 0.3};
    w2_init.reshape({3, 1});
    Parameter w2(w2_init, "w2");                                    // (3, 1)
    Parameter b2(Array{0.05}, "b2");                                // (1,)

    Tape& tape = Tape::current();
    tape.keep_contributions = !graph.empty();  // --graph labels each edge with the gradient it carried
    Var x = tape.constant(points).named("x");
    Var h = tanh(matmul(x, w1) + b1).named("hidden");   // (N, 3)
    Var y = (matmul(h, w2) + b2).named("prediction");   // (N, 1)
    Var err = y - tape.constant(targets);
    Var loss = mean(err * err).named("loss");           // mean squared error, a scalar
    loss.backward();

    std::printf("The tape after loss.backward(): one line per entry, in creation order.\n\n%s\n",
                tape.listing().c_str());
    std::printf("loss = %.6f\n\n", loss.value()());
    for (const Parameter* p : {&w1, &b1, &w2, &b2})
      std::printf("d loss / d %s =\n%s\n\n", p->name().c_str(), to_string(p->grad()).c_str());

    if (!graph.empty()) {
      explorer::DotOptions picture;
      picture.title = "tape_demo: y = tanh(x W1 + b1) W2 + b2, loss = mean((y - t)^2)";
      experiments::write_graph_file(graph, explorer::to_dot(tape, picture), ex.html.overwrite);
      std::printf("graph: %s\n\n", graph.c_str());
    }

    const GradcheckResult check = check_by_differences({w1.value(), b1.value(), w2.value(), b2.value(), points}, targets);
    std::printf("%s\n", check.report.c_str());
    const double after = loss_after_sgd_step(w1, b1, w2, b2, lr, points, targets);
    if (!std::isfinite(after)) {  // e.g. --lr 1e308: the step throws the weights past any finite loss
      char text[160];
      std::snprintf(text, sizeof text, "the loss after one SGD step with --lr %g is %g: the step blew the weights up; "
                    "give a smaller --lr", lr, after);
      throw Error(text);
    }
    std::printf("after one SGD step with lr %.3g: loss = %.6f\n", lr, after);
    if (!check.ok) throw Error("the gradients differ from the finite differences (the report above)");
  });
}
