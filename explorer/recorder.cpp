#include "explorer/recorder.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>

#include "analysis/step_measures.hpp"
#include "explorer/dot.hpp"
#include "explorer/spawn.hpp"
#include "engine/tape.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/residual_edges.hpp"

namespace gs::explorer {

std::vector<std::size_t> default_snapshot_steps() { return {0, 1, 2, 3, 5, 8, 13, 20, 30, 50, 80, 130, 200, 300}; }

namespace {

std::size_t parse_count(const std::string& piece, const std::string& whole, const std::string& flag) {
  std::size_t used = 0;
  unsigned long long v = 0;
  try {
    if (piece.empty() || piece.find_first_not_of("0123456789") != std::string::npos) throw std::invalid_argument("");
    v = std::stoull(piece, &used);
  } catch (const std::exception&) {
    throw Error(flag + " " + whole + ": '" + piece + "' is not a step number (a whole number >= 0); write e.g. "
                "0,1,2,5,10 or 0-10 or 0:300:10");
  }
  if (v > 100000000ull) throw Error(flag + " " + whole + ": step " + piece + " is past 1e8");
  return static_cast<std::size_t>(v);
}

}  // namespace

std::vector<std::size_t> parse_steps(const std::string& text, const std::string& flag) {
  std::set<std::size_t> steps;
  std::stringstream in(text);
  std::string piece;
  if (text.empty()) throw Error(flag + ": empty list; write e.g. 0,1,2,5,10");
  while (std::getline(in, piece, ',')) {
    const std::size_t colon = piece.find(':'), dash = piece.find('-');
    if (colon != std::string::npos) {  // start:stop:stride
      const std::size_t colon2 = piece.find(':', colon + 1);
      if (colon2 == std::string::npos)
        throw Error(flag + " " + text + ": '" + piece + "' needs start:stop:stride, e.g. 0:300:10");
      const std::size_t a = parse_count(piece.substr(0, colon), text, flag);
      const std::size_t b = parse_count(piece.substr(colon + 1, colon2 - colon - 1), text, flag);
      const std::size_t s = parse_count(piece.substr(colon2 + 1), text, flag);
      if (s == 0 || b < a) throw Error(flag + " " + text + ": '" + piece + "' needs start <= stop and a stride >= 1");
      for (std::size_t t = a; t <= b && steps.size() <= 10000; t += s) steps.insert(t);  // capped as below
    } else if (dash != std::string::npos) {  // a-b
      const std::size_t a = parse_count(piece.substr(0, dash), text, flag);
      const std::size_t b = parse_count(piece.substr(dash + 1), text, flag);
      if (b < a) throw Error(flag + " " + text + ": '" + piece + "' runs backwards");
      for (std::size_t t = a; t <= b && steps.size() <= 10000; ++t) steps.insert(t);
    } else {
      steps.insert(parse_count(piece, text, flag));
    }
    if (steps.size() > 10000) throw Error(flag + " " + text + ": more than 10000 snapshot steps");
  }
  if (!text.empty() && text.back() == ',') throw Error(flag + " " + text + ": a trailing comma");
  return {steps.begin(), steps.end()};
}

std::string module_group(const std::string& name) {
  const std::size_t dot = name.find('.');
  if (dot == std::string::npos) return name;
  const std::size_t next = name.find('.', dot + 1);
  const std::string second = name.substr(dot + 1, next == std::string::npos ? std::string::npos : next - dot - 1);
  if (!second.empty() && second.find_first_not_of("0123456789") == std::string::npos)
    return name.substr(0, next == std::string::npos ? name.size() : next);
  return name.substr(0, dot);
}

namespace {

// Graphviz's SVG of a DOT text, without the XML prologue and comments; nothing when dot is not on
// PATH. Throws gs::Error if dot fails.
std::optional<std::string> render_svg(const std::string& dot) {
  namespace fs = std::filesystem;
  // mkdtemp creates a new directory under a fresh name: the remove_all below deletes only what is ours.
  std::string name = (fs::temp_directory_path() / "gradscope-explorer-XXXXXX").string();
  if (!::mkdtemp(name.data())) throw Error("explorer: cannot create a temporary directory " + name + ": " + std::strerror(errno));
  const fs::path tmp = name;
  std::string svg, log;
  int status = 0;
  try {
    nn::write_file_atomically(tmp / "graph.dot", dot);
    status = spawn_and_wait({"dot", "-Tsvg", "graph.dot"}, tmp, "graph.svg", "dot.log");
    if (status != 127) svg = nn::read_file(tmp / "graph.svg"), log = nn::read_file(tmp / "dot.log");
  } catch (...) {
    fs::remove_all(tmp);
    throw;
  }
  fs::remove_all(tmp);
  if (status == 127) return std::nullopt;
  if (status != 0) throw Error("explorer: dot -Tsvg failed (status " + std::to_string(status) + "): " + log.substr(0, 300));
  const std::size_t start = svg.find("<svg");
  if (start == std::string::npos) throw Error("explorer: dot wrote no <svg> element");
  std::string out;
  for (std::size_t i = start; i < svg.size();) {  // drop <!-- comments -->
    const std::size_t c = svg.find("<!--", i);
    if (c == std::string::npos) {
      out.append(svg, i, std::string::npos);
      break;
    }
    out.append(svg, i, c - i);
    const std::size_t end = svg.find("-->", c);
    i = end == std::string::npos ? svg.size() : end + 3;
    while (i < svg.size() && svg[i] == '\n') ++i;
  }
  return out;
}

// The layout the page wants: the residual stream top to bottom with each block's branches beside it.
// Graphviz ranks a parameter (a node with no inputs) freely, and a block's parameters ranked above
// the previous block's end make its box overlap that block's ranks, so dot sets the blocks side by
// side: a diagonal staircase. An invisible edge from the stream position last forked before a
// parameter's first use to the parameter keeps each block below the one before it.
std::string stream_layout(const std::string& dot, const GraphView& view) {
  std::string extra;
  for (const NodeView& n : view.nodes) {
    if (!n.inputs.empty() || n.consumers.empty() || n.op == "const") continue;
    const int use = n.consumers.front();
    int at = -1;
    for (const ForkView& f : view.forks)
      if (f.at < use && f.at > at) at = f.at;
    if (at >= 0) extra += "  n" + std::to_string(at) + " -> n" + std::to_string(n.index) + " [style=invis, weight=0];\n";
  }
  const std::size_t close = dot.rfind('}');
  if (close == std::string::npos) throw Error("explorer: to_dot wrote no closing brace");
  return dot.substr(0, close) + extra + dot.substr(close);
}

double rms(const Array& x) { return norm(x) / std::sqrt(static_cast<double>(std::max<std::size_t>(1, x.size()))); }

}  // namespace

RunRecorder::RunRecorder(std::string name, const nn::TransformerLM& model, RecorderOptions options)
    : model_(model), options_(std::move(options)) {
  run_.name = std::move(name);
  for (const nn::NamedParameter& p : model_.named_parameters()) groups_.push_back(module_group(p.name));
  run_.declare_chart({"loss", "training loss", "The mean cross-entropy of the step's training batch, in nats, "
                      "from the forward pass before that step's update.", "loss (nats)", false});
  run_.declare_chart({"grad_norm", "gradient norm per module",
                      "|dL/dW|: the Frobenius norm of the gradient of all of a module's parameters together "
                      "(sqrt of the sum of their squares), before clipping.", "|dL/dW| (log)", true});
  run_.declare_chart({"ln_input_rms", "RMS of each norm's input",
                      "sqrt(mean x^2) of the input x of each norm (LayerNorm, RMSNorm or DyT), over the whole "
                      "batch; in Post-LN that input is the sum skip + branch before the norm.", "RMS (log)", true});
  run_.declare_chart({"ln_gain", "gradient gain through each norm",
                      "|dL/dx| / |dL/dy| for y = N(x), counting only the part of dL/dx that came back "
                      "through the norm (not a skip path around it); LayerNorm's and RMSNorm's Jacobians "
                      "scale like 1/sigma.", "gain (log)", true});
  run_.declare_chart({"fork_skip", "skip part of the stream's gradient at each residual fork",
                      "|skip part| of dL/ds at a stream position s where y = s + f(s) forks: what came back "
                      "along the identity path.", "|dL/ds| skip (log)", true});
  run_.declare_chart({"fork_branch", "branch part of the stream's gradient at each residual fork",
                      "|branch part| of dL/ds at the same forks: what came back through the sublayer f.",
                      "|dL/ds| branch (log)", true});
  run_.declare_chart({"update_ratio", "update ratio per module",
                      "|delta W| / |W| over all of a module's parameters: the size of the optimizer's update "
                      "after the step's pass, relative to the weights.", "|dW|/|W| (log)", true});
}

bool RunRecorder::is_snapshot(std::size_t step) const {
  return std::binary_search(options_.snapshot_steps.begin(), options_.snapshot_steps.end(), step);
}

void RunRecorder::record_pass(std::size_t step, const Tape& tape, double loss) {
  if (!tape.keep_contributions)
    throw Error("explorer: record_pass(step " + std::to_string(step) + "): the tape keeps no contributions; set "
                "tape.keep_contributions = true before backward() (the norm gains and the forks' split read them)");
  run_.add_point("loss", "loss", step, loss);
  record_grad_norms(step);
  record_norm_traces(step);
  if (!view_) view_ = read_graph(tape);  // the structure, once (read_snapshot checks it every time)
  record_graph(step, tape, loss);
  record_forks(step, tape);
}

// |dL/dW| per module group: the square root of the sum of its parameters' squared gradient norms.
// Keeps the values, which record_update compares the updated ones with.
void RunRecorder::record_grad_norms(std::size_t step) {
  const std::vector<nn::NamedParameter> params = model_.named_parameters();
  std::vector<std::pair<std::string, double>> sq;  // per group, in first-appearance order
  before_.clear();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const double n = norm(params[i].parameter.grad());
    auto it = std::find_if(sq.begin(), sq.end(), [&](const auto& g) { return g.first == groups_[i]; });
    if (it == sq.end()) sq.push_back({groups_[i], n * n});
    else it->second += n * n;
    before_.push_back(params[i].parameter.value());
  }
  for (const auto& [group, s] : sq) run_.add_point("grad_norm", group, step, std::sqrt(s));
}

// Every norm trace of the model's last forward, as its blocks recorded them (any norm kind): the RMS of
// its input x, and the gain |dL/dx through the norm| / |dL/dy| (the norm's own part of dL/dx).
void RunRecorder::record_norm_traces(std::size_t step) {
  for (const nn::NormTrace& s : model_.norm_traces()) {
    run_.add_point("ln_input_rms", s.name, step, rms(s.in.value()));
    if (!s.in.entry().has_grad || !s.out.entry().has_grad) continue;
    run_.add_point("ln_gain", s.name, step, analysis::through_norm(s) / norm(s.out.grad()));
  }
}

// At a snapshot step: the graph drawn once (or the note why not), then this step's numbers on it.
void RunRecorder::record_graph(std::size_t step, const Tape& tape, double loss) {
  if (!is_snapshot(step)) return;
  if (!run_.graph && run_.graph_note.empty()) {
    if (tape.size() > options_.max_graph_entries) {
      run_.graph_note = "The tape has " + std::to_string(tape.size()) + " entries, more than the " +
                        std::to_string(options_.max_graph_entries) +
                        " the graph view draws (about 4 layers): this run shows charts only.";
    } else if (!options_.draw) {
      run_.graph_note = "The graph was not drawn for this run.";
    } else {
      explorer::DotOptions dot;
      dot.legend = false;
      dot.svg_ids = true;
      if (std::optional<std::string> svg = render_svg(stream_layout(explorer::to_dot(tape, dot), *view_)))
        run_.graph = GraphData{*view_, std::move(*svg), {}};
      else
        run_.graph_note = "Graphviz's dot is not on PATH (apt-get install graphviz): no graph.";
    }
  }
  if (!run_.graph) return;
  Snapshot snap = read_snapshot(tape, *view_, step, loss, options_.bins);
  if (options_.paths) read_paths(tape, snap);
  else snap.paths_note = "the path split was not computed for this run";
  run_.graph->snapshots.push_back(std::move(snap));
}

// The skip and branch parts of the stream's gradient at every residual fork, every step.
void RunRecorder::record_forks(std::size_t step, const Tape& tape) {
  for (const ForkView& f : view_->forks) {
    const Entry& s = tape.entry(f.at);
    if (!s.has_grad || s.contributions.empty()) continue;
    // split_skip_branch takes a Var; it only reads the tape.
    const nn::SkipBranch parts = nn::split_skip_branch(Var(tape, f.at, tape.generation()));
    const std::string name = (s.label.empty() ? "#" + std::to_string(f.at) : s.label) + " -> " + f.branch;
    run_.add_point("fork_skip", name, step, norm(parts.skip));
    run_.add_point("fork_branch", name, step, norm(parts.branch));
  }
}

void RunRecorder::record_update(std::size_t step) {
  const std::vector<nn::NamedParameter> params = model_.named_parameters();
  if (before_.size() != params.size())
    throw Error("explorer: record_update(" + std::to_string(step) + ") without record_pass before it");
  std::vector<std::pair<std::string, std::pair<double, double>>> sq;  // group -> (|dW|^2, |W|^2)
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Array& w = params[i].parameter.value();
    double d = 0.0, n = 0.0;
    auto a = before_[i].begin();
    for (auto b = w.begin(); b != w.end(); ++a, ++b) {
      d += (*b - *a) * (*b - *a);
      n += *a * *a;
    }
    auto it = std::find_if(sq.begin(), sq.end(), [&](const auto& g) { return g.first == groups_[i]; });
    if (it == sq.end()) sq.push_back({groups_[i], {d, n}});
    else it->second.first += d, it->second.second += n;
  }
  for (const auto& [group, s] : sq) run_.add_point("update_ratio", group, step, std::sqrt(s.first / s.second));
  before_.clear();
}

void chart_collapse(Run& run, std::size_t step, const std::vector<double>& out_cosine,
                    const std::vector<double>& dead_units, const std::vector<double>& att_entropy_share) {
  run.declare_chart({"out_cosine", "position cosine of each block's output", "The mean cosine between the "
                     "positions of a sequence in the block's output (1: every position holds one direction).",
                     "cosine", false});
  run.declare_chart({"dead_units", "dead FFN units per block", "The share of the block's FFN units whose "
                     "pre-activation is <= 0 at every position of the step's batch.", "share", false});
  run.declare_chart({"att_entropy_share", "attention entropy share per block", "The block's attention entropy "
                     "over its uniform maximum, mean over its heads (1: uniform attention).", "share", false});
  for (std::size_t i = 0; i < out_cosine.size(); ++i) {
    const std::string block = "blocks." + std::to_string(i);
    run.add_point("out_cosine", block, step, out_cosine[i]);
    run.add_point("dead_units", block, step, dead_units.at(i));
    run.add_point("att_entropy_share", block, step, att_entropy_share.at(i));
  }
}

}  // namespace gs::explorer
