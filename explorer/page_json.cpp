// The page's data as JSON (nlohmann-json), written as values, never assembled from strings.
// The format is documented in docs/explorer.md ("The data in the page"); numbers are rounded to 5
// significant digits (what the page shows has at most 4), NaN and Inf are written as null.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include <nlohmann/json.hpp>

#include "explorer/page.hpp"

namespace gs::explorer {
namespace {

using nlohmann::json;

constexpr const char* format_name = "gradscope-explorer";
constexpr int format_version = 1;

json num(double x) {  // 5 significant digits; null for NaN and Inf
  if (!std::isfinite(x)) return nullptr;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.5g", x);
  return std::strtod(buf, nullptr);
}
double num_of(const json& j) { return j.is_null() ? std::numeric_limits<double>::quiet_NaN() : j.get<double>(); }

// [size, nonfinite, norm, mean, sd, min, max, count_0, ..., count_{bins-1}]: an array, not an object,
// because a page holds thousands (the histogram's bins span [min, max]).
json stats_json(const Stats& s) {
  json a = {s.size, s.nonfinite, num(s.norm), num(s.mean), num(s.sd), num(s.min), num(s.max)};
  for (std::size_t c : s.hist.counts) a.push_back(c);
  return a;
}
Stats stats_from(const json& j) {
  if (!j.is_array() || j.size() < 7) throw std::invalid_argument("a statistics array of " + j.dump());
  Stats s;
  s.size = j.at(0);
  s.nonfinite = j.at(1);
  s.norm = num_of(j.at(2));
  s.mean = num_of(j.at(3));
  s.sd = num_of(j.at(4));
  s.min = s.hist.lo = num_of(j.at(5));
  s.max = s.hist.hi = num_of(j.at(6));
  for (std::size_t i = 7; i < j.size(); ++i) s.hist.counts.push_back(j.at(i));
  return s;
}

json numbers(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(num(x));
  return a;
}
std::vector<double> numbers_from(const json& j) {
  std::vector<double> v;
  for (const json& x : j) v.push_back(num_of(x));
  return v;
}

// The edge tag named `s` (nn::edge_tag_name), which the page stores as an edge's "role".
EdgeTag tag_from(const std::string& s) {
  for (EdgeTag t : {EdgeTag{}, nn::skip_edge, nn::branch_out_edge})
    if (s == nn::edge_tag_name(t)) return t;
  throw std::invalid_argument("edge role '" + s + "'");
}
EdgePath path_from(const std::string& s) {
  for (EdgePath p : {EdgePath::plain, EdgePath::skip, EdgePath::branch_in, EdgePath::branch_out})
    if (s == to_string(p)) return p;
  throw std::invalid_argument("edge path '" + s + "'");
}

json graph_json(const GraphData& g, std::vector<std::string>& svgs) {
  json nodes = json::array(), edges = json::array(), forks = json::array(), clusters = json::array();
  for (const NodeView& v : g.view.nodes)
    nodes.push_back({{"i", v.index}, {"op", v.op}, {"label", v.label}, {"scope", v.scope}, {"site", v.site},
                     {"shape", v.shape}, {"requires_grad", v.requires_grad}, {"inputs", v.inputs},
                     {"consumers", v.consumers}, {"fork", v.fork}});
  for (const EdgeView& e : g.view.edges)
    edges.push_back({{"id", e.id()}, {"from", e.from}, {"to", e.to}, {"k", e.input}, {"role", nn::edge_tag_name(e.tag)},
                     {"path", to_string(e.path)}});
  for (const ForkView& f : g.view.forks)
    forks.push_back({{"at", f.at}, {"add", f.add}, {"scope", f.scope}, {"branch", f.branch}});
  for (const ClusterView& c : g.view.clusters)
    clusters.push_back({{"scope", c.scope}, {"parent", c.parent}, {"forks", c.forks}});
  json snapshots = json::array();
  for (const Snapshot& s : g.snapshots) {
    json value = json::array(), grad = json::array(), fk = json::array();
    for (const NodeStep& n : s.nodes) {
      value.push_back(stats_json(n.value));
      grad.push_back(n.has_grad ? stats_json(n.grad) : json(nullptr));
    }
    for (const ForkStep& f : s.forks)
      fk.push_back({num(f.skip), num(f.branch), f.skip_parts, f.branch_parts});
    // per node [|g|, [|g_k|], [share_k]] or null; null for the whole when not computed. The lists stop
    // after the last k with g_k != 0 (the k above it have g_k = 0 exactly: no path of that length).
    json paths = s.paths.empty() ? json(nullptr) : json::array();
    for (const std::optional<NodePaths>& p : s.paths) {
      if (!p) {
        paths.push_back(nullptr);
        continue;
      }
      std::size_t used = p->norm.size();
      while (used > 1 && p->norm[used - 1] == 0.0) --used;
      const std::vector<double> norm(p->norm.begin(), p->norm.begin() + static_cast<std::ptrdiff_t>(used));
      const std::vector<double> share(p->share.begin(), p->share.begin() + static_cast<std::ptrdiff_t>(used));
      paths.push_back(json{num(p->total), numbers(norm), numbers(share)});
    }
    snapshots.push_back({{"step", s.step}, {"loss", num(s.loss)}, {"value", value}, {"grad", grad},
                         {"edge_norm", numbers(s.edge_norm)}, {"edge_share", numbers(s.edge_share)}, {"forks", fk},
                         {"path_max", s.path_max}, {"paths", paths}, {"paths_note", s.paths_note}});
  }
  // Runs of one model share one layout: each SVG is stored once, in the page's "svgs".
  std::size_t svg = std::find(svgs.begin(), svgs.end(), g.svg) - svgs.begin();
  if (svg == svgs.size()) svgs.push_back(g.svg);
  return {{"svg", svg},   {"signature", g.view.signature}, {"nodes", nodes},         {"edges", edges},
          {"forks", forks}, {"clusters", clusters},          {"snapshots", snapshots}};
}

GraphData graph_from(const json& j, const std::vector<std::string>& svgs) {
  GraphData g;
  g.svg = svgs.at(j.at("svg").get<std::size_t>());
  g.view.signature = j.at("signature");
  for (const json& n : j.at("nodes"))
    g.view.nodes.push_back({n.at("i"), n.at("op"), n.at("label"), n.at("scope"), n.at("site"),
                            n.at("shape").get<Shape>(), n.at("requires_grad"), n.at("inputs").get<std::vector<int>>(),
                            n.at("consumers").get<std::vector<int>>(), n.at("fork")});
  for (const json& e : j.at("edges"))
    g.view.edges.push_back({e.at("from"), e.at("to"), e.at("k"), tag_from(e.at("role")), path_from(e.at("path"))});
  for (const json& f : j.at("forks")) g.view.forks.push_back({f.at("at"), f.at("add"), f.at("scope"), f.at("branch")});
  for (const json& c : j.at("clusters"))
    g.view.clusters.push_back({c.at("scope"), c.at("parent"), c.at("forks").get<std::vector<int>>()});
  for (const json& s : j.at("snapshots")) {
    Snapshot snap;
    snap.step = s.at("step");
    snap.loss = num_of(s.at("loss"));
    const json& grad = s.at("grad");
    for (std::size_t i = 0; i < s.at("value").size(); ++i) {
      NodeStep n;
      n.value = stats_from(s.at("value").at(i));
      n.has_grad = !grad.at(i).is_null();
      if (n.has_grad) n.grad = stats_from(grad.at(i));
      snap.nodes.push_back(std::move(n));
    }
    snap.edge_norm = numbers_from(s.at("edge_norm"));
    snap.edge_share = numbers_from(s.at("edge_share"));
    for (const json& f : s.at("forks"))
      snap.forks.push_back({num_of(f.at(0)), num_of(f.at(1)), f.at(2), f.at(3)});
    if (s.contains("paths") && !s.at("paths").is_null()) {  // (a page written before the split has none)
      snap.path_max = s.at("path_max");
      for (const json& p : s.at("paths")) {
        if (p.is_null()) {
          snap.paths.emplace_back();
          continue;
        }
        NodePaths np{num_of(p.at(0)), numbers_from(p.at(1)), numbers_from(p.at(2))};
        if (np.norm.empty() || np.norm.size() > snap.path_max + 1 || np.share.size() != np.norm.size())
          throw std::invalid_argument("a node's path split has " + std::to_string(np.norm.size()) + " lengths, path_max is " +
                                      std::to_string(snap.path_max));
        np.norm.resize(snap.path_max + 1, 0.0);  // the k past the list: g_k = 0
        np.share.resize(snap.path_max + 1, 0.0);
        snap.paths.push_back(std::move(np));
      }
    }
    if (s.contains("paths_note")) snap.paths_note = s.at("paths_note");
    if (snap.nodes.size() != g.view.nodes.size() || snap.edge_norm.size() != g.view.edges.size() ||
        snap.forks.size() != g.view.forks.size() || (!snap.paths.empty() && snap.paths.size() != g.view.nodes.size()))
      throw std::invalid_argument("a snapshot's arrays do not match the graph's nodes, edges and forks");
    g.snapshots.push_back(std::move(snap));
  }
  return g;
}

}  // namespace

std::string page_json(const Page& page) {
  json runs = json::array();
  std::vector<std::string> svgs;
  for (const Run& r : page.runs) {
    json facts = json::array(), charts = json::array(), series = json::array();
    for (const auto& [k, v] : r.facts) facts.push_back({k, v});
    for (const Chart& c : r.charts)
      charts.push_back({{"id", c.id}, {"title", c.title}, {"description", c.description}, {"y_label", c.y_label},
                        {"log_y", c.log_y}});
    for (const StepSeries& s : r.series)
      series.push_back({{"chart", s.chart}, {"name", s.name}, {"steps", s.steps}, {"values", numbers(s.values)}});
    runs.push_back({{"name", r.name},
                    {"facts", facts},
                    {"graph", r.graph ? graph_json(*r.graph, svgs) : json(nullptr)},
                    {"graph_note", r.graph_note},
                    {"charts", charts},
                    {"series", series}});
  }
  const json page_data = {{"format", format_name}, {"version", format_version}, {"title", page.title}, {"svgs", svgs},
                         {"runs", runs}};
  return page_data.dump();
}

Page parse_page_json(const std::string& text, const std::string& what) {
  try {
    const json j = json::parse(text);  // strict: no NaN, no trailing garbage, no comments
    if (j.at("format") != format_name || j.at("version") != format_version)
      throw std::invalid_argument("format " + j.at("format").dump() + " version " + j.at("version").dump() +
                                  ", expected " + format_name + " version " + std::to_string(format_version));
    Page page;
    page.title = j.at("title");
    const std::vector<std::string> svgs = j.at("svgs").get<std::vector<std::string>>();
    for (const json& r : j.at("runs")) {
      Run run;
      run.name = r.at("name");
      for (const json& f : r.at("facts")) run.facts.push_back({f.at(0), f.at(1)});
      if (!r.at("graph").is_null()) run.graph = graph_from(r.at("graph"), svgs);
      run.graph_note = r.at("graph_note");
      for (const json& c : r.at("charts"))
        run.charts.push_back({c.at("id"), c.at("title"), c.at("description"), c.at("y_label"), c.at("log_y")});
      for (const json& s : r.at("series")) {
        StepSeries series{s.at("chart"), s.at("name"), s.at("steps").get<std::vector<std::size_t>>(),
                      numbers_from(s.at("values"))};
        if (series.steps.size() != series.values.size())
          throw std::invalid_argument("series " + series.name + " has " + std::to_string(series.steps.size()) +
                                      " steps and " + std::to_string(series.values.size()) + " values");
        run.series.push_back(std::move(series));
      }
      page.runs.push_back(std::move(run));
    }
    return page;
  } catch (const std::exception& e) {
    throw Error(what + ": not the data of an explorer page: " + e.what());
  }
}

}  // namespace gs::explorer
