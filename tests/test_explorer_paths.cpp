// The path-length profile the explorer page stores per node (explorer/tape_view.hpp read_paths,
// analysis/path_nodes.hpp): the numbers of the page's JSON, recomputed from the model and batch of the
// same step with analysis::path_profile, and checked against the ordinary backward's gradient.
#include "check.hpp"

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "analysis/path_nodes.hpp"
#include "analysis/paths.hpp"
#include "engine/engine.hpp"
#include "explorer/page.hpp"
#include "explorer/recorder.hpp"
#include "explorer/tape_view.hpp"
#include "nn/optim.hpp"
#include "nn/residual_edges.hpp"
#include "nn/transformer_lm.hpp"

namespace test_explorer_paths {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::explorer;
using nlohmann::json;

namespace {

nn::ModelConfig two_blocks(nn::Placement placement) {
  nn::ModelConfig c;
  c.vocab = 5, c.context = 3, c.d_model = 8, c.heads = 2, c.layers = 2, c.placement = placement;
  return c;
}
const IndexArray batch_ids = {{0, 3, 2}, {4, 4, 1}};
const IndexArray batch_targets = {{3, 2, 1}, {4, 1, 0}};

// The page's stored number to 5 significant digits against the computed one.
void check_stored(const json& stored, double computed, double scale) {
  REQUIRE(stored.is_number());
  CHECK(stored.get<double>() == Approx(computed).epsilon(test::tol(1e-4, 1e-2)).margin(test::tol(1e-12, 1e-6) * scale));
}

// The node's [|g|, [|g_k|], [share_k]] in the JSON, padded to K + 1 with the zeros the page reads there.
struct StoredPaths {
  double total = 0.0;
  std::vector<double> norm, share;
};
StoredPaths stored_paths(const json& snapshot, int node) {
  const json& p = snapshot.at("paths").at(static_cast<std::size_t>(node));
  REQUIRE(p.is_array());
  StoredPaths s{p.at(0).get<double>(), p.at(1).get<std::vector<double>>(), p.at(2).get<std::vector<double>>()};
  const std::size_t K = snapshot.at("path_max");
  REQUIRE(s.norm.size() <= K + 1);
  REQUIRE(s.share.size() == s.norm.size());
  s.norm.resize(K + 1, 0.0), s.share.resize(K + 1, 0.0);
  return s;
}

}  // namespace

TEST_CASE("explorer paths: the page's split of emb and of the top is path_profile's on the same step's model "
          "and batch; every node's |g| is its ordinary gradient's", "[explorer][paths]") {
  for (nn::Placement placement : {nn::Placement::post, nn::Placement::pre}) {
    INFO("placement " << nn::placement_name(two_blocks(placement)));
    nn::TransformerLM model(two_blocks(placement));
    nn::Adam adam(model.named_parameters(), nn::AdamOptions{0.9, 0.98, 1e-8, 0.0, false});
    Tape& tape = Tape::current();
    for (int step = 0; step < 2; ++step) {  // the pass of step 2, after two updates
      tape.reset();
      model.zero_grad();
      model.loss(batch_ids, batch_targets).backward();
      adam.step(1e-2);
    }
    tape.reset();
    tape.keep_contributions = true;
    model.zero_grad();
    const Var loss = model.loss(batch_ids, batch_targets);
    loss.backward();
    Run run;
    run.name = "run";
    const GraphView view = read_graph(tape);
    Snapshot snap = read_snapshot(tape, view, 2, loss.value()());
    read_paths(tape, snap);
    run.graph = GraphData{view, "<svg></svg>", {snap}};
    Page page;
    page.runs.push_back(std::move(run));
    const json data = json::parse(page_json(page));
    // The same step's split, computed again from the model's own handles on the same tape.
    const analysis::PathProfile profile = analysis::path_profile(model, loss);
    tape.keep_contributions = false;

    const json& s = data.at("runs").at(0).at("graph").at("snapshots").at(0);
    REQUIRE(s.at("path_max") == 4);  // 2L branches
    const int emb = model.last.emb.index(), top = model.blocks.back()->last.out.index();
    const StoredPaths e = stored_paths(s, emb), t = stored_paths(s, top);
    for (std::size_t k = 0; k <= 4; ++k) {
      INFO("k = " << k);
      check_stored(json(e.norm[k]), profile.emb.norm[k], profile.emb.total);
      check_stored(json(e.share[k]), profile.emb.share[k], 1.0);
      check_stored(json(t.norm[k]), profile.top.norm[k], profile.top.total);
    }
    check_stored(json(e.total), profile.emb.total, 1.0);
    CHECK(t.share[0] == 1.0);  // every path from the top's output to the loss crosses no branch
    // Independently of the sweep: |sum_k g_k| is the ordinary backward's |g| of every node, and nodes
    // without a gradient have no split.
    const json& grads = s.at("grad");
    std::size_t split = 0;
    for (std::size_t i = 0; i < view.nodes.size(); ++i) {
      INFO("node " << i << " " << view.nodes[i].op << " " << view.nodes[i].label);
      CHECK(grads.at(i).is_null() == s.at("paths").at(i).is_null());
      if (grads.at(i).is_null()) continue;
      const StoredPaths p = stored_paths(s, static_cast<int>(i));
      const double g = norm(tape.entry(static_cast<int>(i)).grad);
      check_stored(json(p.total), g, 1.0);
      double sum = 0.0;
      for (double x : p.share) sum += x;
      if (g > 0.0) CHECK(sum == Approx(1.0).epsilon(1e-3));
      ++split;
    }
    CHECK(split > 50);
    if (placement == nn::Placement::pre) {
      // By definition the skip path from the top to emb is the identity: g_0(emb) = g(top).
      CHECK(e.norm[0] == Approx(norm(tape.entry(top).grad)).epsilon(1e-4));
      // A Pre-LN block's parameters sit inside its branches: every path to them crosses one, g_0 = 0.
      for (const nn::NamedParameter& p : model.blocks[0]->named_parameters()) {
        const StoredPaths q = stored_paths(s, p.parameter.var().index());
        CHECK(q.norm[0] == 0.0);
      }
    }
    tape.reset();
  }
}

TEST_CASE("explorer paths: entry_path_splits on y = s + tanh(s) by hand; a leaf that needs no gradient has none",
          "[explorer][paths]") {
  Tape tape;
  TapeScope scope(tape);
  const Var x = tape.leaf(Array{{0.5, -1.0, 2.0}}, false);
  const Var w = tape.leaf(Array{{0.3, 0.7, -0.2}});
  const Var s = mul(x, w);
  const Var y = add(s, tanh(s)).mark_input(1, nn::branch_out_edge);
  const Var loss = sum(mul(y, y));
  loss.backward();
  const analysis::EntryPaths p = analysis::entry_path_splits(loss, {x.index(), s.index(), y.index()});
  REQUIRE(p.max_length == 1);
  CHECK(!p.splits[0]);  // x needs no gradient
  REQUIRE(p.splits[1]);
  // dL/dy = 2y; into s: 2y along the skip (k = 0) and 2y (1 - tanh(s)^2) through the branch (k = 1)
  const Array gy = 2.0 * y.value();
  const Array th = xt::tanh(s.value());
  const Array g1 = gy * (1.0 - th * th);
  CHECK(p.splits[1]->norm[0] == Approx(norm(gy)));
  CHECK(p.splits[1]->norm[1] == Approx(norm(g1)));
  CHECK(p.splits[1]->total == Approx(norm(s.grad())));
  const Array g = s.grad();
  CHECK(p.splits[1]->share[0] == Approx(xt::sum(gy * g)() / xt::sum(g * g)()));
  CHECK(p.splits[2]->norm[1] == 0.0);  // y: above the branch, no path crosses it
  CHECK(analysis::last_backward_root(tape) == loss.index());
  CHECK_THROWS_WITH(analysis::entry_path_splits(loss, {99}), Catch::Contains("tape index 99 is not on the tape"));
}

TEST_CASE("explorer paths: entry_path_splits gives every entry of a model path_split's numbers on all K + 1 "
          "coefficients of graded_backward", "[explorer][paths]") {
  for (nn::Placement placement : {nn::Placement::post, nn::Placement::pre}) {
    nn::TransformerLM model(two_blocks(placement));
    Tape& tape = Tape::current();
    tape.reset();
    const Var loss = model.loss(batch_ids, batch_targets);
    std::vector<int> every;
    std::vector<Var> all;
    for (std::size_t i = 0; i < tape.size(); ++i)
      if (tape.entry(static_cast<int>(i)).requires_grad) {
        every.push_back(static_cast<int>(i));
        all.emplace_back(tape, static_cast<int>(i), tape.generation());
      }
    const analysis::EntryPaths p = analysis::entry_path_splits(loss, every);
    const std::vector<TapeEdge> edges = analysis::branch_out_edges(tape);
    const std::vector<std::vector<Array>> g = graded_backward(loss, edges, edges.size(), all);
    REQUIRE(p.splits.size() == every.size());
    std::size_t trimmed = 0;  // entries whose path lengths do not span 0 .. K
    for (std::size_t x = 0; x < every.size(); ++x) {
      INFO("entry " << every[x] << " " << tape.entry(every[x]).op);
      REQUIRE(p.splits[x]);
      const analysis::PathSplit whole = analysis::path_split({g[x]});
      CHECK(p.splits[x]->norm == whole.norm);
      CHECK(p.splits[x]->share == whole.share);
      CHECK(p.splits[x]->total == whole.total);
      CHECK(p.splits[x]->mean_length == Approx(whole.mean_length).margin(1e-15));
      trimmed += whole.norm.front() == 0.0 || whole.norm.back() == 0.0;
    }
    CHECK(trimmed > 0);
    tape.reset();
  }
}

TEST_CASE("explorer paths: a tape the sweep refuses (a gradient hook) gets a note, not numbers", "[explorer][paths]") {
  Tape tape;
  TapeScope scope(tape);
  tape.keep_contributions = true;
  const Var w = tape.leaf(Array{{0.3, 0.7, -0.2}});
  const Var s = mul(w, w);
  s.register_hook([](Array&) {});
  const Var y = add(s, tanh(s)).mark_input(0, nn::skip_edge).mark_input(1, nn::branch_out_edge);
  const Var loss = sum(y);
  loss.backward();
  Snapshot snap = read_snapshot(tape, read_graph(tape), 0, loss.value()());
  read_paths(tape, snap);
  CHECK(snap.paths.empty());
  CHECK_THAT(snap.paths_note, Catch::Contains("gradient hooks"));
  Tape other;  // a tape with no backward on it
  Snapshot none;
  read_paths(other, none);
  CHECK_THAT(none.paths_note, Catch::Contains("no backward"));
}

TEST_CASE("explorer paths: the recorder splits every snapshot, and a page read back keeps the split",
          "[explorer][paths]") {
  if (std::system("command -v dot > /dev/null 2>&1") != 0) {
    WARN("Graphviz's dot is not installed: the recorder draws no graph and keeps no snapshot");
    return;
  }
  nn::TransformerLM model(two_blocks(nn::Placement::pre));
  RecorderOptions options;
  options.snapshot_steps = {0};
  RunRecorder recorder("pre", model, options);
  Tape& tape = Tape::current();
  tape.reset();
  tape.keep_contributions = true;
  const Var loss = model.loss(batch_ids, batch_targets);
  loss.backward();
  recorder.record_pass(0, tape, loss.value()());
  const analysis::PathProfile profile = analysis::path_profile(model, loss);
  const int emb = model.last.emb.index();
  tape.keep_contributions = false;
  tape.reset();
  Page page;
  page.runs.push_back(recorder.take());
  const Page back = parse_page_json(page_json(page), "test");
  REQUIRE(back.runs.at(0).graph);
  const Snapshot& s = back.runs[0].graph->snapshots.at(0);
  REQUIRE(s.path_max == 4);
  REQUIRE(s.paths.size() == back.runs[0].graph->view.nodes.size());
  REQUIRE(s.paths[static_cast<std::size_t>(emb)]);
  const NodePaths& p = *s.paths[static_cast<std::size_t>(emb)];
  REQUIRE(p.norm.size() == 5);
  for (std::size_t k = 0; k <= 4; ++k) CHECK(p.share[k] == Approx(profile.emb.share[k]).epsilon(1e-4).margin(1e-12));
}

}  // namespace test_explorer_paths
