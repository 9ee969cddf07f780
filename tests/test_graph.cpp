// Watching gradients: module scopes on the tape, the contributions summed into a gradient
// (engine/tools/inspect.hpp), and the DOT picture of the graph, checked against the tape it was drawn from.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>

#include "check.hpp"
#include "engine/engine.hpp"
#include "explorer/dot.hpp"
#include "explorer/spawn.hpp"
#include "experiments/lib/graph.hpp"
#include "analysis/stream_split.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/transformer_lm.hpp"
#include "nn_gradcheck.hpp"
#include "engine/tools/inspect.hpp"
#include "nn/residual_edges.hpp"

namespace test_graph {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;
using namespace gs::analysis;

namespace {

const IndexArray ids = {{0, 3, 2}, {4, 4, 1}};      // (B, T) = (2, 3), vocab 5 (gradcheck_config)
const IndexArray targets = {{3, 2, 1}, {4, 1, 0}};

std::string num(double x) {  // as to_dot prints edge labels
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

// Every edge line "  n<from> -> n<to> [label="...", ...]" of a DOT text: (from, to) -> label ("" if none).
std::multimap<std::pair<int, int>, std::string> edges(const std::string& dot) {
  std::multimap<std::pair<int, int>, std::string> out;
  const std::regex edge(R"re(\n  n(\d+) -> n(\d+) \[(label="([^"]*)")?)re");
  for (auto it = std::sregex_iterator(dot.begin(), dot.end(), edge); it != std::sregex_iterator(); ++it)
    out.insert({{std::stoi((*it)[1]), std::stoi((*it)[2])}, (*it)[4]});
  return out;
}

std::string label_of(const std::string& dot, int from, int to) {
  const auto all = edges(dot);
  const auto it = all.find({from, to});
  REQUIRE(it != all.end());
  return it->second;
}

bool is_under(const std::string& scope, const std::string& prefix) { return scope.rfind(prefix, 0) == 0; }

bool have_dot() { return std::system("command -v dot > /dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("ModuleScope stamps the dotted module path on every entry recorded inside it", "[tape][scope]") {
  Tape tape;
  Var x = tape.leaf(Array{1.0, 2.0});
  REQUIRE(x.entry().scope.empty());
  {
    ModuleScope block(tape, "blocks.3");
    Var y = x * 2.0;
    REQUIRE(y.entry().scope == "blocks.3");
    {
      ModuleScope attn(tape, "attn");
      REQUIRE(tape.scope() == "blocks.3.attn");
      REQUIRE(tanh(y).entry().scope == "blocks.3.attn");
      REQUIRE(tape.leaf(Array{0.0}).entry().scope == "blocks.3.attn");
    }
    REQUIRE((y + x).entry().scope == "blocks.3");
  }
  REQUIRE(tape.scope().empty());
  REQUIRE(sum(x).entry().scope.empty());
}

TEST_CASE("a TransformerLM's entries carry their module: block, sublayer, and the residual adds at block level",
          "[tape][scope][nn]") {
  for (const std::string& placement : nn::placement_presets()) {
    INFO(placement);
    TransformerLM model(test::gradcheck_config(placement));
    Tape tape;
    TapeScope use(tape);
    model.loss(ids, targets);
    for (std::size_t l = 0; l < 2; ++l) {
      const BlockTrace& t = model.blocks[l]->last;
      const std::string b = "blocks." + std::to_string(l);
      REQUIRE(t.attn_sum.entry().scope == b);  // the residual adds belong to the block itself
      REQUIRE(t.mlp_sum.entry().scope == b);
      REQUIRE(model.blocks[l]->attn.last_att.entry().scope == b + ".attn");
      REQUIRE(tape.entry(t.attn_sum.entry().inputs[0]).scope != b + ".attn");  // the skip input is not attn's
    }
    for (std::size_t i = 0; i < tape.size(); ++i) {
      const Entry& e = tape.entry(static_cast<int>(i));
      if (std::string(e.op) == "param") {  // a parameter enters the tape inside its own module
        INFO(e.label);
        const std::string module = e.label.substr(0, e.label.rfind('.'));
        REQUIRE(module.rfind(e.scope, 0) == 0);  // "blocks.0.attn.q.weight" in "blocks.0.attn"
        REQUIRE(!e.scope.empty());
      }
    }
    REQUIRE(model.last.logits.entry().scope == "head");
    REQUIRE(model.last.emb.entry().scope.empty());
  }
}

TEST_CASE("contributions(v) lists each term of v's gradient with its sender, summing to the gradient",
          "[inspect][contributions]") {
  Tape tape;
  tape.keep_contributions = true;
  Var x = tape.leaf(test::randn({3, 4}, 2)).named("x");
  Var branch;
  {
    ModuleScope scope(tape, "f");
    branch = tanh(x).named("branch");
  }
  Var y = x + branch;  // x reaches y through the identity and through tanh
  Var z = sum(y * y);
  z.backward();

  const std::vector<ContributionInfo> parts = contributions(x);
  REQUIRE(parts.size() == 2);
  REQUIRE(parts[0].from == y.index());
  REQUIRE(parts[0].op == "add");
  REQUIRE(parts[0].scope.empty());
  REQUIRE(parts[1].from == branch.index());
  REQUIRE(parts[1].op == "tanh");
  REQUIRE(parts[1].label == "branch");
  REQUIRE(parts[1].scope == "f");
  // The add passes dL/dy through unchanged; tanh sends dL/dy * (1 - tanh^2 x).
  REQUIRE(xt::allclose(parts[0].grad, 2.0 * y.value(), 0.0, 1e-14));
  REQUIRE(xt::allclose(parts[1].grad, 2.0 * y.value() * (1.0 - branch.value() * branch.value()), 0.0, test::tol(1e-14, 1e-5)));
  REQUIRE(xt::allclose(parts[0].grad + parts[1].grad, x.grad(), 0.0, 1e-14));
  for (const ContributionInfo& c : parts) REQUIRE(c.norm == Approx(norm(c.grad)).epsilon(1e-15));
  REQUIRE(contributions(z).empty());  // the root's gradient is the seed

  // An input read twice by one op gets two terms from it.
  tape.reset();
  Var w = tape.leaf(Array{3.0});
  sum(w * w).backward();
  const std::vector<ContributionInfo> twice = contributions(w);
  REQUIRE(twice.size() == 2);
  REQUIRE(twice[0].from == twice[1].from);
  REQUIRE(twice[0].grad(0) == 3.0);
}

TEST_CASE("contributions(v) says what is missing: keep_contributions, or a gradient", "[inspect][contributions]") {
  Tape tape;
  Var x = tape.leaf(Array{1.0, 2.0});
  Var unused = tape.leaf(Array{1.0});
  sum(tanh(x)).backward();  // keep_contributions off
  REQUIRE_THROWS_AS(contributions(x), Error);
  REQUIRE_THROWS_WITH(contributions(x), Catch::Contains("keep_contributions") && Catch::Contains("tape index 0"));
  tape.keep_contributions = true;
  sum(tanh(x)).backward();
  REQUIRE(contributions(x).size() == 1);
  REQUIRE_THROWS_WITH(contributions(unused), Catch::Contains("has no gradient"));
}

TEST_CASE("edge tags: a residual connection tagged on the tape splits the fork's gradient into skip and branch",
          "[inspect][tags]") {
  // y = x + tanh(x) * w: the skip path hands back dL/dy, the branch tanh(x) * w the rest.
  Tape tape;
  tape.keep_contributions = true;
  Var x = tape.leaf(Array{0.5, -1.0, 2.0});
  Var w = tape.leaf(Array{3.0});
  Var branch = tanh(x) * w;
  Var y = (x + branch).mark_input(0, skip_edge).mark_input(1, branch_out_edge);
  REQUIRE(tape.tag(y.index(), 0) == skip_edge);
  REQUIRE(tape.tag(y.index(), 1) == branch_out_edge);
  REQUIRE(tape.tag(branch.index(), 0) == EdgeTag{});  // nothing marked
  Var loss = sum(y * y);
  loss.backward();
  const SkipBranch parts = split_skip_branch(x);
  REQUIRE(parts.skip_parts == 1);
  REQUIRE(parts.branch_parts == 1);
  const Array dy = 2.0 * y.value();                                          // dL/dy
  REQUIRE(xt::all(xt::equal(parts.skip, dy)));                                   // the identity hands it back
  const Array t = xt::tanh(x.value());
  REQUIRE(analysis::max_abs_diff(parts.branch, Array(dy * 3.0 * (1.0 - t * t))) <= 1e-14);  // d/dx [w tanh(x)]
  REQUIRE(analysis::max_abs_diff(Array(parts.skip + parts.branch), x.grad()) <= 1e-15);
  // The tags change nothing in the backward pass: the same graph unmarked gives the same bits.
  Tape plain;
  Var x2 = plain.leaf(Array{0.5, -1.0, 2.0});
  Var w2 = plain.leaf(Array{3.0});
  Var y2 = x2 + tanh(x2) * w2;
  sum(y2 * y2).backward();
  REQUIRE(xt::all(xt::equal(x2.grad(), x.grad())));
  // A fork no skip edge leaves, and an input that does not exist, are refused.
  REQUIRE_THROWS_WITH(split_skip_branch(w), Catch::Contains("no edge tagged skip_edge"));
  REQUIRE_THROWS_WITH(y.mark_input(2, skip_edge), Catch::Contains("mark_input") && Catch::Contains("has 2 inputs"));
  REQUIRE(std::string(edge_tag_name(branch_out_edge)) == "branch-out");
  REQUIRE(std::string(to_string(EdgePath::branch_in)) == "branch-in");
}

TEST_CASE("to_dot: one cluster per block with nested sublayers, edges labelled with the norms they carried",
          "[inspect][dot]") {
  for (const std::string& placement : nn::placement_presets()) {
    INFO(placement);
    ModelConfig config = test::gradcheck_config(placement);
    TransformerLM model(config);
    test::jitter(model.named_parameters(), 0.3, 4);  // rezero's gates away from 0, so every branch carries
    Tape tape;
    TapeScope use(tape);
    tape.keep_contributions = true;
    model.loss(ids, targets).backward();
    const std::string dot = explorer::to_dot(tape);

    REQUIRE(dot.rfind("digraph tape {", 0) == 0);
    for (const char* cluster : {"label=\"blocks.0\"", "label=\"blocks.1\"", "label=\"attn\"", "label=\"mlp\""})
      REQUIRE(dot.find(cluster) != std::string::npos);
    if (placement != "rezero") REQUIRE(dot.find("label=\"ln1\"") != std::string::npos);
    // Every entry is a node, every input an edge.
    std::size_t inputs = 0;
    for (std::size_t i = 0; i < tape.size(); ++i) inputs += tape.entry(static_cast<int>(i)).inputs.size();
    REQUIRE(edges(dot).size() == inputs);

    // At every stream position: the skip edge carries what the skip path sent back, each branch edge
    // what that op of the branch sent, and the node shows the split that the stream binary reports.
    std::size_t branch_edges = 0;
    for (const auto& [key, label] : edges(dot)) branch_edges += label.rfind("branch ", 0) == 0;
    REQUIRE(branch_edges >= 2 * config.layers);
    const std::vector<analysis::StreamPosition> positions = analysis::stream_positions(model);
    for (std::size_t k = 0; k + 1 < positions.size(); ++k) {
      INFO(positions[k].name);
      const Var& s = positions[k].value;
      const SkipBranch split = split_skip_branch(s);
      REQUIRE(dot.find("|g| " + num(norm(s.grad())) + "\\nskip " + num(norm(split.skip)) + " | branch " +
                       num(norm(split.branch)) + "\"") != std::string::npos);
      // The one op that reads s along the skip path: the add, or deepnorm's alpha * s.
      const Var& sum = k % 2 == 0 ? model.blocks[k / 2]->last.attn_sum : model.blocks[k / 2]->last.mlp_sum;
      const int skip_op = tape.entry(sum.index()).inputs[0] == s.index() ? sum.index() : tape.entry(sum.index()).inputs[0];
      REQUIRE(label_of(dot, s.index(), skip_op) == "skip " + num(norm(split.skip)));
      for (const ContributionInfo& c : contributions(s))
        if (c.from != skip_op && is_under(c.scope, "blocks"))
          REQUIRE(label_of(dot, s.index(), c.from) == "branch " + num(c.norm));
    }
    // An ordinary edge, parameter -> the op that reads it: the parameter's whole gradient came that way.
    for (const ContributionInfo& c : contributions(model.blocks[1]->mlp.fc1.weight))
      REQUIRE(label_of(dot, model.blocks[1]->mlp.fc1.weight.var().index(), c.from) == num(c.norm));
  }
}

TEST_CASE("to_dot without contributions draws grey unlabelled edges", "[inspect][dot]") {
  TransformerLM model(test::gradcheck_config("post"));
  Tape tape;
  TapeScope use(tape);
  model.loss(ids, targets).backward();  // keep_contributions off
  const std::string dot = explorer::to_dot(tape);
  for (const auto& [key, label] : edges(dot)) REQUIRE(label.empty());
  REQUIRE(dot.find("color=\"#bbbbbb\"") != std::string::npos);
  explorer::DotOptions few;
  few.max_entries = 10;
  REQUIRE_THROWS_WITH(explorer::to_dot(tape, few), Catch::Contains("max_entries"));
}

// Hidden from the ordinary run ("[.graphviz]"): ctest runs it as graph.renders_with_graphviz, which is
// skipped where Graphviz's dot is not installed and fails where dot is installed and does not render.
TEST_CASE("the DOT renders with Graphviz", "[.graphviz]") {
  TransformerLM model(test::gradcheck_config("post"));
  Tape tape;
  TapeScope use(tape);
  tape.keep_contributions = true;
  model.loss(ids, targets).backward();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gradscope_test_graph";
  std::filesystem::create_directories(dir);
  explorer::DotOptions titled;
  titled.title = "a \"quoted\" title";
  nn::write_file_atomically(dir / "tiny.dot", explorer::to_dot(tape, titled));
  const std::string render = "dot -Tsvg -o " + (dir / "tiny.svg").string() + " " + (dir / "tiny.dot").string();
  REQUIRE(std::system(render.c_str()) == 0);
  REQUIRE(nn::read_file(dir / "tiny.svg").find("<svg") != std::string::npos);
  experiments::write_graph_file((dir / "g.svg").string(), explorer::to_dot(tape));  // --graph FILE.svg
  REQUIRE(nn::read_file(dir / "g.svg").find("<svg") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("write_model_graph (--graph) writes DOT, or SVG through dot, atomically", "[experiments][dot]") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gradscope_test_model_graph";
  std::filesystem::remove_all(dir);
  experiments::ModelOptions o;
  o.layers = 1;
  o.d_model = 8;
  o.heads = 2;
  o.seq = 4;
  o.batch = 2;
  o.vocab = 7;
  o.placement = "post";
  experiments::write_model_graph((dir / "g.dot").string(), o);
  const std::string dot = nn::read_file(dir / "g.dot");
  REQUIRE(dot.find("label=\"blocks.0\"") != std::string::npos);
  REQUIRE(dot.find("label=\"skip ") != std::string::npos);
  REQUIRE(Tape::current().keep_contributions == false);  // restored
  if (!have_dot())  // where Graphviz is installed, graph.renders_with_graphviz checks the SVG
    REQUIRE_THROWS_WITH(experiments::write_graph_file((dir / "g.svg").string(), dot), Catch::Contains("graphviz"));
  for (const auto& f : std::filesystem::directory_iterator(dir))  // no temporary file left behind
    REQUIRE(f.path().filename().string().find(".tmp") == std::string::npos);
  std::filesystem::remove_all(dir);
}

// The one way dot and gnuplot are run: in a process group of its own (a terminal's Ctrl-C does not
// reach it), its output where asked, a missing program as 127.
TEST_CASE("spawn_and_wait runs a program in its own process group and waits for it", "[experiments][dot]") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gradscope_test_spawn";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // Field 5 of /proc/PID/stat is the process group: the child's is its own pid.
  const std::string own_group = "read -r line < /proc/$$/stat; set -- $line; echo \"$1 $5\"; test \"$5\" = \"$1\"";
  REQUIRE(explorer::spawn_and_wait({"sh", "-c", own_group}, dir, "out.txt", "err.txt") == 0);
  const std::string ids = nn::read_file(dir / "out.txt");
  INFO(ids);
  REQUIRE(ids.size() > 2);
  REQUIRE(explorer::spawn_and_wait({"sh", "-c", "echo no >&2; exit 3"}, dir, "", "err.txt") == 3);
  REQUIRE(nn::read_file(dir / "err.txt") == "no\n");
  REQUIRE(explorer::spawn_and_wait({"sh", "-c", "kill -TERM $$"}, dir) == 128 + 15);
  REQUIRE(explorer::spawn_and_wait({"gradscope-no-such-program"}) == 127);
  std::filesystem::remove_all(dir);
}

}  // namespace test_graph
