// The explorer page's data (explorer/): what it reads off a tape, what a recorded run
// holds, and the page file it writes and reads back. The page's behaviour in a browser is checked by
// tests/explorer_browser_check.cpp (headless Chromium).
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "check.hpp"
#include "engine/engine.hpp"
#include "engine/tools/inspect.hpp"
#include "nn/residual_edges.hpp"
#include "explorer/dot.hpp"
#include "explorer/page.hpp"
#include "explorer/recorder.hpp"
#include "explorer/tape_view.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/optim.hpp"
#include "nn/transformer_lm.hpp"

namespace test_explorer {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::explorer;
using Catch::Matchers::Contains;

namespace fs = std::filesystem;

namespace {

bool have_dot() { return std::system("command -v dot > /dev/null 2>&1") == 0; }

// A fresh directory under the temporary directory, removed at the end of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// y = s + tanh(s) with s = x * w, marked as a residual connection; loss = sum(y * y).
struct Residual {
  Tape tape;
  Var x, w, s, branch, y, loss;
  Residual() {
    tape.keep_contributions = true;
    x = tape.leaf(Array{{0.5, -1.0, 2.0}}, false);
    w = tape.leaf(Array{{0.3, 0.7, -0.2}});
    s = mul(x, w).named("s");
    branch = tanh(s);
    y = add(s, branch).mark_input(0, nn::skip_edge).mark_input(1, nn::branch_out_edge).named("y");
    loss = sum(mul(y, y));
    loss.backward();
  }
};

int edge_index(const GraphView& g, int from, int to) {
  for (std::size_t k = 0; k < g.edges.size(); ++k)
    if (g.edges[k].from == from && g.edges[k].to == to) return static_cast<int>(k);
  FAIL("no edge " << from << " -> " << to);
  return -1;
}

nn::ModelConfig tiny_model(nn::Placement placement) {
  nn::ModelConfig c;
  c.vocab = 5;
  c.context = 3;
  c.d_model = 8;
  c.heads = 2;
  c.layers = 2;
  c.placement = placement;
  return c;
}

const IndexArray ids = {{0, 3, 2}, {4, 4, 1}};  // (B, T) = (2, 3)
const IndexArray targets = {{3, 2, 1}, {4, 1, 0}};

// Trains `model` for `steps` updates with Adam, recording every pass and update.
Run record_run(nn::TransformerLM& model, std::size_t steps, RecorderOptions options, const std::string& name) {
  nn::Adam adam(model.named_parameters(), nn::AdamOptions{0.9, 0.98, 1e-8, 0.0, false});
  RunRecorder recorder(name, model, options);
  Tape& tape = Tape::current();
  tape.keep_contributions = true;
  for (std::size_t step = 0; step <= steps; ++step) {
    tape.reset();
    model.zero_grad();
    const Var loss = model.loss(ids, targets);
    loss.backward();
    recorder.record_pass(step, tape, loss.value()());
    if (step == steps) break;
    adam.step(1e-2);
    recorder.record_update(step);
  }
  tape.keep_contributions = false;
  tape.reset();
  return recorder.take();
}

}  // namespace

TEST_CASE("explorer stats_of: norm, mean, population sd, min, max and a histogram of the finite elements",
          "[explorer]") {
  const Stats s = stats_of(Array{1.0, 2.0, 3.0, 4.0, NAN}, 3);
  CHECK(s.size == 5);
  CHECK(s.nonfinite == 1);
  CHECK(std::isnan(s.norm));  // a norm over a NaN is not a number
  CHECK(s.mean == Approx(2.5));
  CHECK(s.sd == Approx(std::sqrt(1.25)));
  CHECK(s.min == 1.0);
  CHECK(s.max == 4.0);
  CHECK(s.hist.counts == std::vector<std::size_t>{1, 1, 2});  // [1, 2), [2, 3), [3, 4]: 4 lands in the last bin

  const Stats finite = stats_of(Array{{3.0, -4.0}}, 4);
  CHECK(finite.norm == Approx(5.0));
  const Stats flat = stats_of(Array{7.0, 7.0, 7.0}, 4);
  CHECK(flat.sd == 0.0);
  CHECK(flat.hist.counts == std::vector<std::size_t>{3, 0, 0, 0});
}

TEST_CASE("explorer read_graph: nodes, consumers, edge paths and the fork of a marked residual connection",
          "[explorer]") {
  Residual r;
  const GraphView g = read_graph(r.tape);
  REQUIRE(g.nodes.size() == r.tape.size());
  const NodeView& s = g.nodes[static_cast<std::size_t>(r.s.index())];
  CHECK(s.op == "mul");
  CHECK(s.label == "s");
  CHECK_THAT(s.site, Contains("test_explorer.cpp:"));
  CHECK(s.shape == Shape{1, 3});
  CHECK(s.consumers == std::vector<int>{r.branch.index(), r.y.index()});
  REQUIRE(g.forks.size() == 1);
  CHECK(g.forks[0].at == r.s.index());
  CHECK(g.forks[0].add == r.y.index());
  CHECK(s.fork == 0);
  CHECK(g.edges[static_cast<std::size_t>(edge_index(g, r.s.index(), r.y.index()))].path == EdgePath::skip);
  CHECK(g.edges[static_cast<std::size_t>(edge_index(g, r.s.index(), r.branch.index()))].path == EdgePath::branch_in);
  CHECK(g.edges[static_cast<std::size_t>(edge_index(g, r.branch.index(), r.y.index()))].path == EdgePath::branch_out);
  CHECK(g.edges[static_cast<std::size_t>(edge_index(g, r.x.index(), r.s.index()))].path == EdgePath::plain);
  CHECK(g.edges[static_cast<std::size_t>(edge_index(g, r.s.index(), r.y.index()))].id() ==
        "e" + std::to_string(r.y.index()) + "_0");
}

TEST_CASE("explorer read_snapshot: each edge carries the norm and share of its contribution; forks split as "
          "split_skip_branch does",
          "[explorer]") {
  Residual r;
  const GraphView g = read_graph(r.tape);
  const Snapshot snap = read_snapshot(r.tape, g, 7, r.loss.value()());
  CHECK(snap.step == 7);
  REQUIRE(snap.edge_norm.size() == g.edges.size());
  double share = 0.0;
  for (const ContributionInfo& c : contributions(r.s)) {
    const std::size_t k = static_cast<std::size_t>(edge_index(g, r.s.index(), c.from));
    CHECK(snap.edge_norm[k] == Approx(c.norm));
    share += snap.edge_share[k];
  }
  CHECK(share == Approx(1.0));  // <c1, g> + <c2, g> = <g, g>
  CHECK(std::isnan(snap.edge_norm[static_cast<std::size_t>(edge_index(g, r.x.index(), r.s.index()))]));  // x needs none
  const nn::SkipBranch parts = nn::split_skip_branch(r.s);
  REQUIRE(snap.forks.size() == 1);
  CHECK(snap.forks[0].skip == Approx(norm(parts.skip)));
  CHECK(snap.forks[0].branch == Approx(norm(parts.branch)));
  const NodeStep& s = snap.nodes[static_cast<std::size_t>(r.s.index())];
  REQUIRE(s.has_grad);
  CHECK(s.grad.norm == Approx(norm(r.s.grad())));
  CHECK(s.value.mean == Approx(xt::mean(r.s.value())()));
  CHECK_FALSE(snap.nodes[static_cast<std::size_t>(r.x.index())].has_grad);
}

TEST_CASE("explorer read_graph: residual adds in series fork at each stream position; a scaled skip forks "
          "before its scale",
          "[explorer]") {
  Tape tape;
  tape.keep_contributions = true;
  Var x = tape.leaf(Array{0.5, -1.0});
  // Pre-LN's stream: h = x + f(x), y = h + g(h); the second add's skip input is the first add.
  Var h = add(x, tanh(x)).mark_input(0, nn::skip_edge).mark_input(1, nn::branch_out_edge);
  Var y = add(h, sigmoid(h)).mark_input(0, nn::skip_edge).mark_input(1, nn::branch_out_edge);
  // DeepNorm's: z = alpha * y + f(y), the scale on the skip path.
  Var scaled = mul(y, scalar_like(y, 2.0)).mark_input(0, nn::skip_edge);
  Var z = add(scaled, tanh(y)).mark_input(0, nn::skip_edge).mark_input(1, nn::branch_out_edge);
  sum(z * z).backward();
  const GraphView g = read_graph(tape);
  REQUIRE(g.forks.size() == 3);
  CHECK(g.forks[0].at == x.index());
  CHECK(g.forks[1].at == h.index());
  CHECK(g.forks[1].add == y.index());
  CHECK(g.forks[2].at == y.index());  // not the scale alpha * y, which only the skip path reads
  CHECK(g.forks[2].add == z.index());
}

TEST_CASE("explorer read_snapshot refuses a tape of another structure, or one that kept no contributions",
          "[explorer]") {
  Residual r;
  const GraphView g = read_graph(r.tape);
  Tape other;
  Var a = other.leaf(Array{1.0, 2.0});
  sum(a * a).backward();
  CHECK_THROWS_WITH(read_snapshot(other, g, 3, 0.0), Contains("step 3") && Contains("same graph every step"));
  Tape plain;  // the same ops, without keep_contributions
  Var x = plain.leaf(Array{{0.5, -1.0, 2.0}}, false), w = plain.leaf(Array{{0.3, 0.7, -0.2}});
  Var s = mul(x, w);
  Var y = add(s, tanh(s)).mark_input(0, nn::skip_edge).mark_input(1, nn::branch_out_edge);
  sum(mul(y, y)).backward();
  CHECK_THROWS_WITH(read_snapshot(plain, read_graph(plain), 0, 0.0), Contains("keep_contributions"));
  // A pass that was never backpropagated (its loss was not finite) is read, with no gradients.
  Tape forward;
  forward.keep_contributions = true;
  Var f = forward.leaf(Array{1.0, 2.0});
  sum(f * f);
  const Snapshot none = read_snapshot(forward, read_graph(forward), 0, NAN);
  CHECK_FALSE(none.nodes[0].has_grad);

  nn::TransformerLM model(tiny_model(nn::Placement::pre));
  RunRecorder recorder("pre", model);
  Tape& tape = Tape::current();
  tape.reset();
  tape.keep_contributions = false;
  model.loss(ids, targets).backward();
  CHECK_THROWS_WITH(recorder.record_pass(0, tape, 1.0), Contains("record_pass(step 0)") && Contains("keep_contributions"));
  tape.reset();
}

TEST_CASE("explorer read_graph: every placement has one fork per sublayer, and its branch edges are to_dot's",
          "[explorer]") {
  // B2T's MLP skip is (h + x): its fork is h, the MLP's input, not x (which the attention's add took).
  for (const nn::Placement p : {nn::Placement::post, nn::Placement::pre, nn::Placement::peri, nn::Placement::mixln,
                                nn::Placement::b2t}) {
    nn::TransformerLM model(tiny_model(p));
    Tape tape;
    TapeScope scope(tape);
    tape.keep_contributions = true;
    model.loss(ids, targets).backward();
    const GraphView g = read_graph(tape);
    INFO(nn::placement_name(model.config));
    CHECK(g.forks.size() == 2 * model.config.layers);
    const std::vector<std::vector<EdgePath>> paths = nn::edge_paths(tape);  // what to_dot draws
    for (const EdgeView& e : g.edges) {
      CHECK(e.path == paths[static_cast<std::size_t>(e.to)][e.input]);
      if (e.path == EdgePath::branch_in) CHECK(g.nodes[static_cast<std::size_t>(e.from)].fork >= 0);
    }
    for (const ForkView& f : g.forks) CHECK(nn::is_stream_fork(tape, f.at));
  }
}

TEST_CASE("explorer parse_steps: lists, ranges and strides, sorted and each once; bad pieces named", "[explorer]") {
  CHECK(parse_steps("5,0,2,2") == std::vector<std::size_t>{0, 2, 5});
  CHECK(parse_steps("0-3,10") == std::vector<std::size_t>{0, 1, 2, 3, 10});
  CHECK(parse_steps("0:20:10") == std::vector<std::size_t>{0, 10, 20});
  CHECK(default_snapshot_steps().front() == 0);
  CHECK(default_snapshot_steps().back() == 300);
  CHECK_THROWS_WITH(parse_steps("1,x"), Contains("--snapshot-steps 1,x") && Contains("'x'"));
  CHECK_THROWS_WITH(parse_steps("5-2"), Contains("backwards"));
  CHECK_THROWS_WITH(parse_steps("0:10:0"), Contains("stride"));
  CHECK_THROWS_WITH(parse_steps("0:10"), Contains("start:stop:stride"));
  CHECK_THROWS_WITH(parse_steps(""), Contains("empty"));
  CHECK_THROWS_WITH(parse_steps("1,,2"), Contains("''"));
  CHECK_THROWS_WITH(parse_steps("1,"), Contains("trailing comma"));
  CHECK_THROWS_WITH(parse_steps("-3", "--steps-flag"), Contains("--steps-flag"));
  CHECK(module_group("blocks.3.attn.q.weight") == "blocks.3");
  CHECK(module_group("tok_emb.weight") == "tok_emb");
  CHECK(module_group("ln_f.bias") == "ln_f");
  CHECK(module_group("scale") == "scale");
}

TEST_CASE("explorer RunRecorder: the charts' numbers are the model's own, snapshots at the chosen steps",
          "[explorer]") {
  nn::TransformerLM model(tiny_model(nn::Placement::post));
  RecorderOptions options;
  options.snapshot_steps = {0, 2};
  options.draw = have_dot();
  // The update ratio of blocks.0 after the first update, and the first LN's input RMS, computed here
  // from the parameters and the block's own trace.
  std::vector<Array> before;
  for (const nn::NamedParameter& p : model.named_parameters()) before.push_back(p.parameter.value());
  const Run run = record_run(model, 3, options, "post");
  // After the run; replay step 0 for the reference numbers.
  nn::TransformerLM fresh(tiny_model(nn::Placement::post));
  Tape& tape = Tape::current();
  tape.reset();
  const Var loss = fresh.loss(ids, targets);
  const Var ln_in = fresh.blocks[0]->last.attn_sum;  // post: the sum skip + branch enters ln1
  const double rms0 = norm(ln_in.value()) / std::sqrt(static_cast<double>(ln_in.value().size()));
  const double loss0 = loss.value()();
  tape.reset();

  const auto series = [&](const std::string& chart, const std::string& name) -> const StepSeries& {
    for (const StepSeries& s : run.series)
      if (s.chart == chart && s.name == name) return s;
    FAIL("no series " << chart << "/" << name);
    return run.series.front();
  };
  CHECK(series("loss", "loss").steps == std::vector<std::size_t>{0, 1, 2, 3});
  CHECK(series("loss", "loss").values[0] == Approx(loss0));
  CHECK(series("ln_input_rms", "blocks.0.ln1").values[0] == Approx(rms0));
  CHECK(series("update_ratio", "blocks.0").steps == std::vector<std::size_t>{0, 1, 2});  // no update after step 3
  CHECK(series("grad_norm", "blocks.1").values.size() == 4);
  CHECK(series("fork_skip", "emb -> blocks.0.attn").values.size() == 4);
  for (double g : series("ln_gain", "blocks.1.ln2").values) CHECK(g > 0.0);
  // |delta W| / |W| of blocks.0 over the whole run's first update, against the copy taken before.
  nn::TransformerLM again(tiny_model(nn::Placement::post));
  nn::Adam adam(again.named_parameters(), nn::AdamOptions{0.9, 0.98, 1e-8, 0.0, false});
  tape.reset();
  again.loss(ids, targets).backward();
  adam.step(1e-2);
  tape.reset();
  double d = 0.0, w = 0.0;
  const auto params = again.named_parameters();
  for (std::size_t i = 0; i < params.size(); ++i)
    if (module_group(params[i].name) == "blocks.0") {
      const Array delta = params[i].parameter.value() - before[i];
      d += std::pow(gs::norm(delta), 2);
      w += std::pow(gs::norm(before[i]), 2);
    }
  CHECK(series("update_ratio", "blocks.0").values[0] == Approx(std::sqrt(d / w)));
  if (options.draw) {
    REQUIRE(run.graph);
    REQUIRE(run.graph->snapshots.size() == 2);
    CHECK(run.graph->snapshots[1].step == 2);
    CHECK_THAT(run.graph->svg, Contains("id=\"cluster:blocks.0\""));
    CHECK(run.graph->view.forks.size() == 4);  // two blocks, two sublayers each
  }
}

TEST_CASE("explorer RunRecorder: the norm charts come from the blocks' norm traces, for every norm kind",
          "[explorer]") {
  // RMSNorm and DyT record no "layernorm_fused" entry; peri and out have norms off the stream.
  struct Case {
    nn::Placement placement;
    nn::Norm norm;
    std::vector<std::string> sites;  // in forward order
  };
  const std::vector<Case> cases = {
      {nn::Placement::pre, nn::Norm::rms, {"blocks.0.ln1", "blocks.0.ln2", "blocks.1.ln1", "blocks.1.ln2", "ln_f"}},
      {nn::Placement::post, nn::Norm::dyt, {"blocks.0.ln1", "blocks.0.ln2", "blocks.1.ln1", "blocks.1.ln2"}},
      {nn::Placement::peri, nn::Norm::dyt,
       {"blocks.0.ln1", "blocks.0.ln_attn_out", "blocks.0.ln2", "blocks.0.ln_mlp_out", "blocks.1.ln1",
        "blocks.1.ln_attn_out", "blocks.1.ln2", "blocks.1.ln_mlp_out", "ln_f"}},
      {nn::Placement::out, nn::Norm::rms, {"blocks.0.ln1", "blocks.0.ln2", "blocks.1.ln1", "blocks.1.ln2", "ln_f"}},
  };
  for (const Case& c : cases) {
    nn::ModelConfig config = tiny_model(c.placement);
    config.norm = c.norm;
    INFO(nn::placement_name(config) << ", norm " << static_cast<int>(c.norm));
    // The reference: the input of the first norm at step 0, from a fresh model's own trace.
    nn::TransformerLM fresh(config);
    Tape& tape = Tape::current();
    tape.reset();
    fresh.loss(ids, targets);
    const nn::BlockTrace& t0 = fresh.blocks[0]->last;
    // post: the sum skip + branch enters ln1; out: Attn(x), input 0 of the fused norm whose output is the
    // attention's branch; pre, peri: the stream x.
    const Var first_in = c.placement == nn::Placement::post  ? t0.attn_sum
                         : c.placement == nn::Placement::out ? Var(tape, t0.attn_branch.entry().inputs[0], tape.generation())
                                                             : t0.input;
    const double rms0 = norm(first_in.value()) / std::sqrt(static_cast<double>(first_in.value().size()));
    tape.reset();

    nn::TransformerLM model(config);
    RecorderOptions options;
    options.draw = false;
    const Run run = record_run(model, 2, options, "run");
    for (const char* chart : {"ln_input_rms", "ln_gain"}) {
      std::vector<std::string> names;
      for (const StepSeries& s : run.series) {
        if (s.chart != chart) continue;
        names.push_back(s.name);
        CHECK(s.values.size() == 3);
        for (double v : s.values) CHECK((std::isfinite(v) && v > 0.0));
        if (std::string(chart) == "ln_input_rms" && s.name == c.sites.front()) CHECK(s.values[0] == Approx(rms0));
      }
      CHECK(names == c.sites);
    }
  }
}

TEST_CASE("explorer RunRecorder: above max_graph_entries a run has charts only, and says why", "[explorer]") {
  nn::TransformerLM model(tiny_model(nn::Placement::pre));
  RecorderOptions options;
  options.max_graph_entries = 10;
  const Run run = record_run(model, 1, options, "pre");
  CHECK_FALSE(run.graph);
  CHECK_THAT(run.graph_note, Contains("more than the 10"));
  CHECK_FALSE(run.series.empty());
}

TEST_CASE("explorer page: written, read back with the same data, merged with renamed runs; bad files named",
          "[explorer]") {
  nn::TransformerLM model(tiny_model(nn::Placement::pre));
  RecorderOptions options;
  options.snapshot_steps = {0, 1};
  options.draw = have_dot();
  Page page;
  page.title = "a <test> page";
  page.runs.push_back(record_run(model, 2, options, "pre"));
  page.runs.back().facts = {{"placement", "pre"}};
  page.runs.back().declare_chart({"entropy", "attention entropy", "any named series", "nats", false});
  page.runs.back().add_point("entropy", "blocks.0.head0", 0, 1.5);
  CHECK_THROWS_WITH(page.runs.back().add_point("entropy", "blocks.0.head0", 0, 1.0), Contains("steps must increase"));
  CHECK_THROWS_WITH(page.runs.back().add_point("nope", "x", 0, 1.0), Contains("never declared"));

  TempDir dir("gradscope_test_explorer");
  const fs::path file = dir.path / "sub" / "page.html";
  write_explorer_page(file, page);
  const std::string html = nn::read_file(file);
  CHECK_THAT(html, Contains("Chart.js v3.9"));
  CHECK_THAT(html, Contains("<title>a &lt;test&gt; page</title>"));
  const std::size_t data = html.find("id=\"gradscope-data\">");
  REQUIRE(data != std::string::npos);
  CHECK(html.find("</script", data) == html.find("</script>", data));  // the data block holds no "</script"
  CHECK(html.substr(data, html.find("</script>", data) - data).find('<', 1) == std::string::npos);

  const Page back = read_explorer_page(file);
  CHECK(page_json(back) == page_json(page));  // a round trip keeps every (rounded) number
  CHECK(back.title == page.title);
  REQUIRE(back.runs.size() == 1);
  CHECK(back.runs[0].facts == page.runs[0].facts);

  Page merged = back;
  add_runs(merged, read_explorer_page(file));
  add_runs(merged, read_explorer_page(file));
  REQUIRE(merged.runs.size() == 3);
  CHECK(merged.runs[1].name == "pre (2)");
  CHECK(merged.runs[2].name == "pre (3)");
  if (options.draw) {  // runs of one layout share one SVG in the page
    const std::string one = page_json(back), three = page_json(merged);
    CHECK(three.find("\"svgs\":[\"") != std::string::npos);
    CHECK(three.size() < 3 * one.size());
  }

  nn::write_file_atomically(dir.path / "not.html", "<html>hello</html>");
  CHECK_THROWS_WITH(read_explorer_page(dir.path / "not.html"), Contains("not.html") && Contains("not an explorer page"));
  CHECK_THROWS_WITH(read_explorer_page(dir.path / "missing.html"), Contains("missing.html"));
  CHECK_THROWS_WITH(parse_page_json("{\"format\": \"gradscope-explorer\", \"version\": 1, \"title\": NaN}", "x.html"),
                    Contains("x.html"));
  CHECK_THROWS_WITH(parse_page_json("{\"format\": \"other\", \"version\": 1}", "y.html"),
                    Contains("y.html") && Contains("expected gradscope-explorer"));
}

TEST_CASE("explorer binary: a bad --runs value or a missing --html-add page is one line naming it", "[explorer]") {
  TempDir dir("gradscope_test_explorer_binary");
  const auto run = [&](const std::string& args) {
    const std::string command = std::string("'") + GRADSCOPE_EXPLORER_BINARY + "' " + args + " > '" +
                                (dir.path / "out").string() + "' 2> '" + (dir.path / "err").string() + "'";
    const int raw = std::system(command.c_str());
    return std::make_pair(WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, nn::read_file(dir.path / "err"));
  };
  auto [status, err] = run("--runs post --html '" + (dir.path / "a.html").string() + "'");
  CHECK(status == 2);  // a bad flag value, as in every binary
  CHECK_THAT(err, Catch::Matchers::StartsWith("explorer: error: --runs: 'post' is not PLACEMENT:WARMUP"));
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  std::tie(status, err) = run("--runs '' --html-add '" + (dir.path / "none.html").string() + "'");
  CHECK(status == 1);
  CHECK_THAT(err, Contains("none.html"));
  std::tie(status, err) = run("--snapshot-steps 3-1 --runs pre:0");
  CHECK(status == 1);
  CHECK_THAT(err, Contains("--snapshot-steps 3-1"));
  std::tie(status, err) = run("--runs postln:0");
  CHECK(status == 2);
  CHECK_THAT(err, Contains("--runs postln:0") && Contains("post"));
  std::tie(status, err) = run("--runs post:0:detach-all");  // CHANGE: radam or an intervention of causes
  CHECK(status == 2);
  CHECK_THAT(err, Contains("--runs post:0:detach-all") && Contains("unknown intervention 'detach-all'") &&
                      Contains("ln-undo-gain"));
  std::tie(status, err) = run("--runs post:0:");
  CHECK(status == 2);
  CHECK_THAT(err, Contains("--runs: 'post:0:' is not PLACEMENT:WARMUP[:CHANGE]"));
  CHECK_FALSE(fs::exists(dir.path / "a.html"));
}

TEST_CASE("explorer page: it states the findings' answer, from docs/lesson.md's answer block", "[explorer]") {
  // The block is embedded at build time (embed_assets.cmake): the page shows what the doc says now.
  const std::string doc = nn::read_file(std::filesystem::path(GRADSCOPE_SOURCE_DIR) / "docs" / "lesson.md");
  const std::size_t begin = doc.find("<!-- answer: begin"), end = doc.find("<!-- answer: end");
  REQUIRE(begin != std::string::npos);
  REQUIRE(end > begin);
  const std::string html = page_html(Page{});
  const std::size_t open = html.find("<div id=\"answer\">"), close = html.find("</div>", open);
  REQUIRE(open != std::string::npos);
  const std::string shown = html.substr(open, close - open);
  CHECK(shown.find("<!--") == std::string::npos);  // the check-findings ties are dropped
  // every sentence of the doc's block, less its ties and markdown, is on the page
  std::string words = doc.substr(doc.find("-->", begin) + 3, end - doc.find("-->", begin) - 3);
  for (std::size_t at; (at = words.find("<!--")) != std::string::npos;) words.erase(at, words.find("-->", at) + 3 - at);
  std::string plain;
  for (char c : words) if (c != '*' && c != '`') plain += c;
  std::string shown_plain;
  for (std::size_t i = 0; i < shown.size(); ++i) {
    if (shown[i] == '<') { i = shown.find('>', i); continue; }
    shown_plain += shown[i];
  }
  const auto squeeze = [](std::string s) {
    std::string out;
    for (char c : s) if (!std::isspace(static_cast<unsigned char>(c))) out += c;
    return out;
  };
  CHECK(squeeze(shown_plain).find(squeeze(plain)) != std::string::npos);
  CHECK_THAT(shown_plain, Contains("warmup"));
}

}  // namespace test_explorer
