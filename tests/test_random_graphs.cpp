// A property test: hundreds of random computation graphs, each gradient-checked.
//
// A graph is a small program over a pool of values. The pool starts with 2-3 input leaves of shapes
// (3, 4), (1, 4), (3, 1) and (4,); each step applies a random op to random pool members (often the
// same member twice, so shared inputs are common) and appends the result. Every shape that may enter
// the pool has rank <= 2, a last dimension of 1 or 4 and a second-to-last of 1 or 3, so any two pool
// members broadcast together. The graph's scalar output weights every step's value with fixed random
// weights, so every op's gradient is checked, not only the last one's.
//
// Steps are generated while being evaluated on a scratch tape, so the generator can keep values on
// safe ground: it rejects a step whose value leaves the shape family, is not finite, or sits near a
// kink (relu near 0, max near a tie), and rescales a value above 4 in magnitude by a fixed constant.
// The finished program is deterministic, and gradcheck replays it on its own tapes.
//
// Reproducing a failure: the failing graph's seed and its listing are printed. Run
//   GS_GRAPH_SEED=<seed> gradscope_tests "[.replay]"
// to check that one graph alone.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>

#include "check.hpp"
#include "engine/engine.hpp"
#include "engine/broadcast.hpp"
#include "engine/tools/gradcheck.hpp"

namespace test_random_graphs {  // one namespace per test file: the files compile in groups

using namespace gs;
using test::Vars;

namespace {

using Build = std::function<Var(const Vars& pool)>;

struct Step {
  std::string kind;  // which op family, for the coverage count
  std::string text;  // e.g. "v5 = div(v2, v1 * v1 + 1)"
  Build build;
};

struct Graph {
  unsigned seed = 0;
  std::vector<Array> inputs;
  std::vector<Step> steps;
  std::vector<Array> weights;  // one per step, in its output's shape

  std::string listing() const {
    std::string s = "graph seed " + std::to_string(seed) + ":\n";
    for (std::size_t i = 0; i < inputs.size(); ++i)
      s += "  v" + std::to_string(i) + " = input " + shape_str(shape_of(inputs[i])) + "\n";
    for (const Step& step : steps) s += "  " + step.text + "\n";
    return s;
  }
};

bool in_family(const Shape& s) {
  if (s.size() > 2) return false;
  if (!s.empty() && s.back() != 1 && s.back() != 4) return false;
  if (s.size() == 2 && s[0] != 1 && s[0] != 3) return false;
  return true;
}

double max_abs(const Array& x) {
  double m = 0.0;
  for (double v : x) m = std::max(m, std::abs(v));
  return m;
}

bool all_finite(const Array& x) {
  return std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); });
}

bool away_from_zero(const Array& x) {
  return std::all_of(x.begin(), x.end(), [](double v) { return std::abs(v) >= 1e-3; });
}

// Every group that max reduces has one clear maximum (by 1e-3), so max has no kink nearby.
bool max_is_clear(const Array& x, const std::vector<int>& axes) {
  const std::size_t rank = x.dimension();
  std::vector<bool> reduced(rank, axes.empty());
  for (int a : axes) reduced[static_cast<std::size_t>(a < 0 ? a + static_cast<int>(rank) : a)] = true;
  std::map<std::vector<std::size_t>, std::vector<double>> groups;
  for (std::size_t flat = 0; flat < x.size(); ++flat) {
    std::vector<std::size_t> key(rank);
    std::size_t rest = flat;
    for (std::size_t d = rank; d-- > 0;) {
      key[d] = reduced[d] ? 0 : rest % x.shape(d);
      rest /= x.shape(d);
    }
    groups[key].push_back(x.data()[flat]);
  }
  for (auto& [key, values] : groups) {
    std::sort(values.begin(), values.end(), std::greater<>());
    if (values.size() > 1 && values[0] - values[1] < 1e-3) return false;
  }
  return true;
}

std::string name(std::size_t i) {
  std::string s = "v";  // (not "v" + to_string: g++ 12 warns falsely, -Wrestrict, on that)
  return s += std::to_string(i);
}

std::string axes_text(const std::vector<int>& axes) {
  std::string s = "{";
  for (int a : axes) s += (s.size() > 1 ? ", " : "") + std::to_string(a);
  return s + "}";
}

std::string num(double c) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", c);
  return buf;
}

// Transposed or not, as matmul operands.
Shape matrix_shape(const Shape& s, bool transposed) { return transposed ? Shape{s[1], s[0]} : s; }

class Generator {
 public:
  explicit Generator(unsigned seed) : rng_(seed) {}

  Graph make(unsigned seed) {
    Graph g;
    g.seed = seed;
    const std::vector<Shape> shapes = {{3, 4}, {1, 4}, {3, 1}, {4}};
    const std::size_t n_inputs = 2 + pick(2);
    for (std::size_t i = 0; i < n_inputs; ++i) g.inputs.push_back(test::randn(shapes[pick(shapes.size())], rng_()));
    TapeScope scope(scratch_);
    scratch_.reset();
    pool_.clear();
    for (const Array& x : g.inputs) pool_.push_back(scratch_.leaf(x));
    const std::size_t n_ops = 4 + pick(7);  // 4..10
    for (int attempt = 0; g.steps.size() < n_ops && attempt < 10000; ++attempt) {
      Step step = propose();
      if (!step.build) continue;
      Var out;
      try {
        out = step.build(pool_);
      } catch (const Error&) {
        continue;  // a proposal that does not fit; the generator only proposes fitting ones, but be safe
      }
      const Array& v = out.value();
      if (!in_family(shape_of(v)) || !all_finite(v)) continue;
      const double m = max_abs(v);
      if (m > 4.0) {  // keep magnitudes modest: a fixed rescale is part of the program
        const double c = 2.0 / m;
        step.build = [inner = step.build, c](const Vars& pool) { return inner(pool) * c; };
        step.text += " * " + num(c);
        out = out * c;
      }
      step.text = name(pool_.size()) + " = " + step.text;
      pool_.push_back(out);
      g.steps.push_back(std::move(step));
      g.weights.push_back(test::randn(out.shape(), rng_()) * 0.5);
    }
    return g;
  }

 private:
  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < p; }
  // An operand: often a recent value (deep graphs), often an early one (reuse, shared inputs).
  std::size_t operand() {
    const std::size_t n = pool_.size();
    return chance(0.5) ? n - 1 - pick(std::min<std::size_t>(n, 3)) : pick(n);
  }
  const Array& value(std::size_t i) const { return pool_[i].value(); }
  Shape shape(std::size_t i) const { return shape_of(pool_[i].value()); }

  Mask random_mask(const Shape& s) {
    Mask m = Mask::from_shape(s);
    for (auto& b : m) b = chance(0.5);
    return m;
  }

  std::vector<int> random_axes(std::size_t rank) {
    if (rank == 0) return {};
    switch (pick(rank == 2 ? 4 : 2)) {
      case 0: return {};
      case 1: return {-1};
      case 2: return {0};
      default: return {0, -1};
    }
  }

  Step propose() {
    const std::size_t i = operand();
    const std::size_t j = chance(0.25) ? i : operand();
    const std::string a = name(i), b = name(j);
    const Shape si = shape(i);
    const std::size_t rank = si.size();
    switch (pick(29)) {
      case 0: return {"tanh", "tanh(" + a + ")", [i](const Vars& p) { return tanh(p[i]); }};
      case 1: return {"sigmoid", "sigmoid(" + a + ")", [i](const Vars& p) { return sigmoid(p[i]); }};
      case 2: return {"gelu", "gelu(" + a + ")", [i](const Vars& p) { return gelu(p[i]); }};
      case 3: return {"neg", "-" + a, [i](const Vars& p) { return -p[i]; }};
      case 4:
        if (!away_from_zero(value(i))) return {};
        return {"relu", "relu(" + a + ")", [i](const Vars& p) { return relu(p[i]); }};
      case 5:
        if (max_abs(value(i)) > 3.0) return {};
        return {"exp", "exp(" + a + ")", [i](const Vars& p) { return exp(p[i]); }};
      case 6: return {"log", "log(" + a + " * " + a + " + 1)", [i](const Vars& p) { return log(p[i] * p[i] + 1.0); }};
      case 7:
        return {"sqrt", "sqrt(" + a + " * " + a + " + 1)", [i](const Vars& p) { return sqrt(p[i] * p[i] + 1.0); }};
      case 8: {
        const double e = std::vector<double>{0.5, 1.5, -0.5, -1.3}[pick(4)];
        return {"pow", "pow(" + a + " * " + a + " + 0.5, " + num(e) + ")",
                [i, e](const Vars& p) { return pow(p[i] * p[i] + 0.5, e); }};
      }
      case 9: {
        const double e = chance(0.5) ? 2.0 : 3.0;
        return {"pow", "pow(" + a + ", " + num(e) + ")", [i, e](const Vars& p) { return pow(p[i], e); }};
      }
      case 10: {
        const double c = std::vector<double>{0.5, 2.0, -1.5}[pick(3)];
        switch (pick(5)) {
          case 0: return {"scalar", a + " * " + num(c), [i, c](const Vars& p) { return p[i] * c; }};
          case 1: return {"scalar", num(c) + " - " + a, [i, c](const Vars& p) { return c - p[i]; }};
          case 2: return {"scalar", a + " / " + num(c), [i, c](const Vars& p) { return p[i] / c; }};
          case 3: return {"scalar", num(c) + " + " + a, [i, c](const Vars& p) { return c + p[i]; }};
          default:
            return {"scalar", num(c) + " / (" + a + " * " + a + " + 1)",
                    [i, c](const Vars& p) { return c / (p[i] * p[i] + 1.0); }};
        }
      }
      case 11: return {"add", a + " + " + b, [i, j](const Vars& p) { return p[i] + p[j]; }};
      case 12: return {"sub", a + " - " + b, [i, j](const Vars& p) { return p[i] - p[j]; }};
      case 13: return {"mul", a + " * " + b, [i, j](const Vars& p) { return p[i] * p[j]; }};
      case 14:
        if (chance(0.5))
          return {"div", a + " / (" + b + " * " + b + " + 1)",
                  [i, j](const Vars& p) { return p[i] / (p[j] * p[j] + 1.0); }};
        return {"div", a + " / (sigmoid(" + b + ") + 0.5)",
                [i, j](const Vars& p) { return p[i] / (sigmoid(p[j]) + 0.5); }};
      case 15: {
        Shape s = broadcast_shapes(shape(i), shape(j), "test", Site::current());
        if (chance(0.5) && !s.empty()) s = Shape{s.back()};  // a mask that broadcasts too
        const Mask m = random_mask(s);
        return {"where", "where(mask " + shape_str(s) + ", " + a + ", " + b + ")",
                [i, j, m](const Vars& p) { return gs::where(m, p[i], p[j]); }};
      }
      case 16:
      case 17:
      case 18: {
        const int which = static_cast<int>(pick(3));
        const std::vector<int> axes = random_axes(rank);
        const bool keep = chance(0.5);
        if (which == 2 && !max_is_clear(value(i), axes)) return {};
        const char* op = which == 0 ? "sum" : which == 1 ? "mean" : "max";
        return {op, std::string(op) + "(" + a + ", " + axes_text(axes) + (keep ? ", keepdims)" : ")"),
                [i, which, axes, keep](const Vars& p) {
                  if (which == 0) return sum(p[i], axes, keep);
                  return which == 1 ? mean(p[i], axes, keep) : max(p[i], axes, keep);
                }};
      }
      case 19:
      case 20: {
        if (rank == 0) return {};
        const int axis = chance(0.5) ? -1 : 0;
        if (chance(0.5))
          return {"softmax", "softmax(" + a + ", " + std::to_string(axis) + ")",
                  [i, axis](const Vars& p) { return softmax(p[i], axis); }};
        return {"log_softmax", "log_softmax(" + a + ", " + std::to_string(axis) + ")",
                [i, axis](const Vars& p) { return log_softmax(p[i], axis); }};
      }
      case 21:
      case 22: return propose_matmul();
      case 23: {
        if (rank == 0) return {};
        const Shape& s = si;
        std::vector<long> back(s.begin(), s.end());
        if (s == Shape{4})
          return {"reshape", "reshape(" + a + ", {1, -1})", [i](const Vars& p) { return reshape(p[i], {1, -1}); }};
        if (s == Shape{1, 4})
          return {"reshape", "reshape(" + a + ", {-1})", [i](const Vars& p) { return reshape(p[i], {-1}); }};
        return {"reshape", "reshape(tanh(reshape(" + a + ", {-1})), " + shape_str(s) + ")",
                [i, back](const Vars& p) { return reshape(tanh(reshape(p[i], {-1})), back); }};
      }
      case 24: {  // roll by one along an axis of length > 1: slice + concat
        if (rank == 0) return {};
        const int axis = chance(0.5) ? -1 : 0;
        const std::size_t len = si[axis < 0 ? rank - 1 : 0];
        if (len < 2) return {};
        return {"slice/concat", "roll(" + a + ", axis " + std::to_string(axis) + ")", [i, axis, len](const Vars& p) {
                  return concat({slice(p[i], axis, 1, len), slice(p[i], axis, 0, 1)}, axis);
                }};
      }
      case 25: {  // split the last axis of length 4, treat the pieces differently, join them again
        if (rank == 0 || si.back() != 4) return {};
        const std::size_t first = 1 + pick(3);
        return {"split", "split(" + a + ", -1, {" + std::to_string(first) + ", " + std::to_string(4 - first) + "})",
                [i, first](const Vars& p) {
                  std::vector<Var> parts = split(p[i], -1, {first, 4 - first});
                  return concat({parts[1] * 0.5, tanh(parts[0])}, -1);
                }};
      }
      case 26: {  // gather rows with repeated ids: scatter-add in the backward
        if (rank == 0) return {};
        const std::size_t rows = si[0];
        const std::size_t count = rank == 2 ? 3 : rows;  // keeps the result in the shape family
        IndexArray ids = IndexArray::from_shape({count});
        for (auto& id : ids) id = static_cast<std::int64_t>(pick(rows));
        std::string t = "gather_rows(" + a + ", {";
        for (std::size_t k = 0; k < count; ++k) t += (k ? ", " : "") + std::to_string(ids(k));
        return {"gather_rows", t + "})", [i, ids](const Vars& p) { return gather_rows(p[i], ids); }};
      }
      case 27: {
        const Shape s = rank > 0 && chance(0.5) ? Shape{si.back()} : si;
        const Mask m = random_mask(s);
        const double fill = chance(0.5) ? 0.0 : -1.0;
        return {"masked_fill", "masked_fill(" + a + ", mask " + shape_str(s) + ", " + num(fill) + ")",
                [i, m, fill](const Vars& p) { return masked_fill(p[i], m, fill); }};
      }
      default: {  // cross-entropy of rows of logits
        if (rank == 0 || si.back() != 4) return {};
        const Shape s(si.begin(), si.end() - 1);
        IndexArray t = IndexArray::from_shape(s);
        for (auto& c : t) c = static_cast<std::int64_t>(pick(4));
        return {"cross_entropy", "cross_entropy(" + a + ", targets " + shape_str(s) + ")",
                [i, t](const Vars& p) { return cross_entropy(p[i], t); }};
      }
    }
  }

  // matmul of two pool members, each possibly transposed (a 1-D member is first made a row), such
  // that the product stays in the shape family; or the two-step x y^T z for (3, 4) members.
  Step propose_matmul() {
    std::vector<Step> options;
    const std::size_t n = pool_.size();
    auto as_matrix = [this](std::size_t k, Shape& s, std::string& text, std::function<Var(const Vars&)>& get) {
      s = shape(k);
      text = name(k);
      if (s.size() == 0) return false;
      if (s.size() == 1) {
        s = {1, s[0]};
        text = "row(" + text + ")";
        get = [k](const Vars& p) { return reshape(p[k], {1, -1}); };
      } else {
        get = [k](const Vars& p) { return p[k]; };
      }
      return true;
    };
    for (std::size_t x = 0; x < n; ++x)
      for (std::size_t y = 0; y < n; ++y) {
        Shape sx, sy;
        std::string tx, ty;
        Build gx, gy;
        if (!as_matrix(x, sx, tx, gx) || !as_matrix(y, sy, ty, gy)) continue;
        for (int flags = 0; flags < 4; ++flags) {
          const bool t0 = flags & 1, t1 = flags & 2;
          const Shape l = matrix_shape(sx, t0), r = matrix_shape(sy, t1);
          if (l[1] != r[0] || !in_family({l[0], r[1]})) continue;
          const std::string left = t0 ? "T(" + tx + ")" : tx, right = t1 ? "T(" + ty + ")" : ty;
          options.push_back({"matmul", "matmul(" + left + ", " + right + ")",
                             [gx, gy, t0, t1](const Vars& p) {
                               Var lhs = t0 ? transpose(gx(p)) : gx(p);
                               Var rhs = t1 ? permute(gy(p), {1, 0}) : gy(p);
                               return matmul(lhs, rhs);
                             }});
        }
        if (sx == Shape{3, 4} && sy == Shape{3, 4}) {
          options.push_back({"matmul", "matmul(matmul(" + tx + ", T(" + ty + ")), " + tx + ") * 0.25",
                             [gx, gy](const Vars& p) {
                               return matmul(matmul(gx(p), transpose(gy(p))), gx(p)) * 0.25;
                             }});
        }
      }
    if (options.empty()) return {};
    return options[pick(options.size())];
  }

  std::mt19937 rng_;
  Tape scratch_;
  Vars pool_;
};

// L = sum over steps k of sum(step_k * w_k): every step's value reaches the output.
Var run(const Graph& g, const Vars& leaves) {
  Vars pool = leaves;
  for (const Step& s : g.steps) pool.push_back(s.build(pool));
  Var total;
  for (std::size_t k = 0; k < g.steps.size(); ++k) {
    Var term = sum(pool[leaves.size() + k] * leaves[0].tape().constant(g.weights[k]));
    total = k == 0 ? term : total + term;
  }
  return total;
}

// The values ("v3") that a step's text reads.
std::set<std::string> operands_of(const Step& s) {
  std::set<std::string> out;
  const std::string rhs = s.text.substr(s.text.find('=') + 1);
  for (std::size_t k = 0; k + 1 < rhs.size(); ++k) {
    if (rhs[k] != 'v' || !std::isdigit(static_cast<unsigned char>(rhs[k + 1]))) continue;
    std::size_t e = k + 1;
    while (e < rhs.size() && std::isdigit(static_cast<unsigned char>(rhs[e]))) ++e;
    out.insert(rhs.substr(k, e - k));
  }
  return out;
}

// Whether some value is read by two or more steps (a fan-out whose gradients must be summed).
bool has_shared_value(const Graph& g) {
  std::map<std::string, int> uses;
  for (const Step& s : g.steps)
    for (const std::string& v : operands_of(s)) ++uses[v];
  return std::any_of(uses.begin(), uses.end(), [](const auto& u) { return u.second >= 2; });
}

constexpr unsigned kMasterSeed = 20240607;  // fixed: the same graphs every run
constexpr int kGraphs = 300;

void check_graph(const Graph& g) {
  INFO(g.listing());
  REQUIRE(g.steps.size() >= 4);
  REQUIRE(g.steps.size() <= 10);
  const GradcheckResult r = gradcheck([&g](const Vars& leaves) { return run(g, leaves); }, g.inputs);
  INFO(r.report);
  REQUIRE(r.ok);
}

}  // namespace

TEST_CASE("300 random graphs pass gradcheck", "[random][gradcheck]") {
  std::mt19937 master(kMasterSeed);
  std::map<std::string, int> coverage;
  int shared = 0;
  for (int n = 0; n < kGraphs; ++n) {
    const unsigned seed = master();
    INFO("graph " << n << " of " << kGraphs << ", seed " << seed << " (replay: GS_GRAPH_SEED=" << seed
                  << " gradscope_tests \"[.replay]\")");
    Generator gen(seed);
    const Graph g = gen.make(seed);
    for (const Step& s : g.steps) ++coverage[s.kind];
    shared += has_shared_value(g);
    check_graph(g);
  }
  // The generator really exercised every op family, and shared inputs were common.
  const std::vector<std::string> kinds = {"tanh",   "sigmoid", "gelu",    "neg",         "relu",        "exp",
                                          "log",    "sqrt",    "pow",     "scalar",      "add",         "sub",
                                          "mul",    "div",     "where",   "sum",         "mean",        "max",
                                          "softmax", "log_softmax", "matmul", "reshape", "slice/concat", "split",
                                          "gather_rows", "masked_fill", "cross_entropy"};
  std::string table;
  for (const auto& [kind, count] : coverage) table += kind + " " + std::to_string(count) + ", ";
  INFO("ops used: " << table << "graphs with a value used twice: " << shared);
  for (const std::string& kind : kinds) {
    INFO("op family " << kind);
    REQUIRE(coverage[kind] >= 10);
  }
  REQUIRE(shared >= kGraphs / 2);
}

TEST_CASE("replay one random graph from GS_GRAPH_SEED", "[.replay]") {
  // Without GS_GRAPH_SEED (e.g. when a filter of only exclusions selects hidden tests too), replay
  // the first graph of the fixed sequence.
  const char* env = std::getenv("GS_GRAPH_SEED");
  const unsigned seed = env ? static_cast<unsigned>(std::stoul(env)) : std::mt19937(kMasterSeed)();
  Generator gen(seed);
  const Graph g = gen.make(seed);
  WARN(g.listing());
  check_graph(g);
}

}  // namespace test_random_graphs
