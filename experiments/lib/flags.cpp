#include "experiments/lib/flags.hpp"

#include <CLI/CLI.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <thread>

#include "engine/error.hpp"
#include "nn/data/dataset.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::experiments {
namespace {

constexpr double no_limit = std::numeric_limits<double>::infinity();

// The most --jobs may be: 4 x the hardware threads (a thread per job; more only wait for a core).
unsigned max_jobs() { return 4 * std::max(1u, std::thread::hardware_concurrency()); }

// What values a flag takes.
struct Range {
  enum class Kind { whole, real, choice, placement, file, directory, shard, any };
  Kind kind = Kind::any;
  double lo = 0.0, hi = no_limit;  // whole and real: lo <= v <= hi, or lo < v <= hi when `above`
  bool above = false;
  std::string zero;                // what 0 means where it is a special value, e.g. "0: no clipping"
  std::vector<std::string> choices;
};

Range whole(double lo, double hi = no_limit, std::string zero = "") {
  return {Range::Kind::whole, lo, hi, false, std::move(zero), {}};
}
Range real_above(double lo) { return {Range::Kind::real, lo, no_limit, true, "", {}}; }
Range real_from(double lo, std::string zero = "") { return {Range::Kind::real, lo, no_limit, false, std::move(zero), {}}; }
Range choice(std::vector<std::string> names) { return {Range::Kind::choice, 0, 0, false, "", std::move(names)}; }
Range of(Range::Kind kind) { return {kind, 0, 0, false, "", {}}; }
// A regular file of at most `bytes`: what its reader reads (a larger one would be refused later, by it).
Range file_of_at_most(std::size_t bytes) { return {Range::Kind::file, 0, static_cast<double>(bytes), false, "", {}}; }

// Every flag of every binary. "PROGRAM --flag" rows override "--flag" for one program.
const std::vector<std::pair<std::string, Range>>& table() {
  static const std::vector<std::pair<std::string, Range>> rows = {
      // the model (every binary that builds one)
      {"--placement", of(Range::Kind::placement)},
      {"--norm", choice({"layer", "rms", "dyt", "none"})},
      {"--residual", choice({"none", "deepnorm", "admin", "rezero", "lns"})},
      {"--mixln-post", whole(0)},
      {"--dyt-alpha", real_above(0)},
      {"--layers", whole(1)},
      {"--d-model", whole(1)},
      {"--heads", whole(1)},
      {"--d-ff", whole(0, no_limit, "0: 4 x --d-model")},
      {"--seq", whole(1)},
      {"--batch", whole(1)},
      {"--vocab", whole(2, 1 << 20)},
      {"--seed", whole(0)},
      {"--init", choice({"xavier", "gpt2"})},
      {"--qk-norm", choice({"none", "layer", "rms"})},
      // the grids
      {"--placements", of(Range::Kind::placement)},
      {"--seeds", whole(1, 1000)},
      {"--jobs", whole(1, max_jobs())},
      {"--shard", of(Range::Kind::shard)},
      {"--merge", of(Range::Kind::directory)},
      {"--depths", whole(1)},
      {"--layers-list", whole(1)},
      {"--out", of(Range::Kind::any)},
      {"--dump", of(Range::Kind::any)},
      {"--graph", of(Range::Kind::any)},
      {"--graph-step", whole(0, no_limit, "0: at initialization")},
      // the explorer page (explorer/, docs/explorer.md)
      {"--html", of(Range::Kind::any)},
      {"--html-add", file_of_at_most(nn::default_read_limit)},
      {"--snapshot-steps", of(Range::Kind::any)},
      {"explorer --runs", of(Range::Kind::any)},
      // training
      {"--steps", whole(1)},
      {"stream --steps", whole(0, no_limit, "0: measure at initialization")},
      {"explorer --steps", whole(0, no_limit, "0: the pass at initialization only")},
      {"--lr", real_above(0)},
      {"--lrs", real_above(0)},
      {"--warmup", whole(0)},
      {"--warmups", whole(0)},
      {"--schedule-steps", whole(0, no_limit, "0: --steps")},
      {"--schedule", choice({"constant", "warmup", "inverse_sqrt", "inverse-sqrt", "rsqrt", "cosine"})},
      {"--optimizer", choice({"sgd", "adam", "adamw", "radam"})},
      {"--adam-beta1", {Range::Kind::real, 0, 1 - 1e-9, false, "", {}}},
      {"--adam-beta2", {Range::Kind::real, 0, 1 - 1e-9, false, "", {}}},
      {"--adam-eps", real_above(0)},
      {"--adam-v0", choice({"zero", "g0sq"})},
      {"--z-loss", real_from(0, "0: none")},
      {"--hold", whole(0, no_limit, "0: none")},
      {"--intervene", choice({"none", "ln-undo-gain", "ln-detach-stats", "detach-skip", "detach-branch", "freeze-ln"})},
      {"--weight-decay", real_from(0)},
      {"--clip", real_from(0, "0: no clipping")},
      {"--text", file_of_at_most(nn::text_dataset_max_bytes)},
      {"--datasets", choice({"markov", "text"})},
      {"--markov-order", whole(1)},
      {"--markov-concentration", real_above(0)},
      {"--eval-every", whole(0, no_limit, "0: only at the end")},
      {"--eval-batches", whole(1, 100000)},
      {"--margin", real_from(0)},
      {"--window", whole(1)},
      {"--early", whole(1)},
      {"--early-window", whole(1)},
      {"--save", of(Range::Kind::any)},
      {"--resume", of(Range::Kind::directory)},
      {"--sample", whole(0, 10000000, "0: none")},
      {"--temperature", real_from(0, "0: greedy, always the most likely token")},
      // measurements at init
      {"--eps", real_above(0)},
      {"--batches", whole(1)},
      // benchmarks
      {"--reps", whole(1)},
      {"--tolerance", {Range::Kind::real, 1e-12, 0.5, false, "", {}}},
      {"--adam-steps", whole(1)},
      {"--chain", whole(3)},
      // curvature (sharpness)
      {"--every", whole(1)},
      {"--lanczos-iterations", whole(1, 10000)},
      {"--size", choice({"small", "large", "both"})},
      // the learning-rate sweep (lrsweep)
      {"--variants", of(Range::Kind::any)},
      // the interventions of causes
      {"--rows", of(Range::Kind::any)},
      {"--clamp", real_above(0)},
      {"--branch-scale", real_above(0)},
      {"--control-steps", whole(0)},
      {"--group-warmup", whole(1)},
      {"--boost", real_above(0)},
      {"--boost-steps", whole(0)},
      {"--reset-step", whole(0)},
      {"--sgd-lr", real_above(0)},
      {"--z-coef", real_above(0)},
  };
  return rows;
}

// A value written so that it reads back to the same value: a double in its shortest exact form.
template <class T>
std::string exact_text(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    return v;
  } else if constexpr (std::is_same_v<T, double>) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, end);
  } else {
    return std::to_string(v);
  }
}
template <class T>
std::string exact_text(const std::vector<T>& v) {
  std::string s;
  for (const T& x : v) s += (s.empty() ? "" : ",") + exact_text(x);
  return s;
}

const Range& range_of(const std::string& program, const std::string& name) {
  for (const std::string& key : {program + " " + name, name})
    for (const auto& [flag, range] : table())
      if (flag == key) return range;
  throw Error("add_flag: " + name + " has no row in the flag table (experiments/lib/flags.cpp)");
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string text_of(const Range& r, double type_max) {
  const double hi = std::min(r.hi, type_max);
  std::string s;
  switch (r.kind) {
    case Range::Kind::whole:
      s = "a whole number " + (hi < 1e19 ? "in [" + exact_text(r.lo) + ", " + exact_text(hi) + "]"
                                        : ">= " + exact_text(r.lo));
      break;
    case Range::Kind::real:
      s = std::string("a finite number ") + (r.above ? "> " : ">= ") + exact_text(r.lo);
      if (r.hi < no_limit) s += " and <= " + exact_text(r.hi);
      break;
    case Range::Kind::choice:
      return "one of " + joined(r.choices);
    case Range::Kind::placement:
      return "a placement: a preset (" + joined(default_placements()) + ", sandwich) or P/N/R (docs/placements.md)";
    case Range::Kind::file:
      return "a regular file of at most " + std::to_string(static_cast<std::uintmax_t>(r.hi) >> 20) + " MiB";
    case Range::Kind::directory:
      return "an existing directory";
    case Range::Kind::shard:
      return "K/N: shard K of N, 1 <= K <= N";
    case Range::Kind::any:
      return "";
  }
  return r.zero.empty() ? s : s + "; " + r.zero;
}

// "" if `text` is in the range, else what is wrong. A placement is also rewritten to its own name.
std::string problem(const Range& r, double type_max, std::string& text) {
  const std::string bad = "'" + text + "' is not " + text_of(r, type_max);
  switch (r.kind) {
    case Range::Kind::whole: {
      if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return bad;  // no sign
      std::uint64_t v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      const bool overflow = ec == std::errc::result_out_of_range;
      const double hi = std::min(r.hi, type_max);
      if (overflow || static_cast<double>(v) > hi) {
        char most[32];
        std::snprintf(most, sizeof most, "%.0f", hi);
        if (r.hi < no_limit) return "'" + text + "' is too large for " + text_of(r, type_max);  // "in [1, 8]"
        return "'" + text + "' is too large: the most it may be is " + most;
      }
      return static_cast<double>(v) >= r.lo ? "" : bad;
    }
    case Range::Kind::real: {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      const bool decimal = !text.empty() && text.find_first_not_of("0123456789+-.eE") == std::string::npos;
      const bool ok = decimal && end == text.c_str() + text.size() && std::isfinite(v) &&
                      (r.above ? v > r.lo : v >= r.lo) && v <= r.hi;
      return ok ? "" : bad;
    }
    case Range::Kind::choice:
      return std::find(r.choices.begin(), r.choices.end(), text) != r.choices.end() ? "" : bad;
    case Range::Kind::placement:
      try {
        nn::ModelConfig c;
        nn::apply_placement(c, text);
        text = nn::placement_name(c);  // canonical: "sandwich" -> "peri", "pre/layer/none" -> "pre"
        return "";
      } catch (const std::exception& e) {
        return e.what();
      }
    case Range::Kind::file: {
      struct stat s {};
      if (::stat(text.c_str(), &s) != 0 || !S_ISREG(s.st_mode)) return bad;
      if (static_cast<double>(s.st_size) > r.hi)
        return "'" + text + "' has " + std::to_string(s.st_size) + " bytes, more than the " +
               std::to_string(static_cast<std::uintmax_t>(r.hi) >> 20) + " MiB this flag reads";
      return "";
    }
    case Range::Kind::directory:
      return std::filesystem::is_directory(text) ? "" : bad;
    case Range::Kind::shard: {
      const std::size_t slash = text.find('/');
      std::string k = text.substr(0, slash), n = slash == std::string::npos ? "" : text.substr(slash + 1);
      const Range count = whole(1);
      if (slash == std::string::npos || !problem(count, 1e9, k).empty() || !problem(count, 1e9, n).empty() ||
          std::stoul(k) > std::stoul(n))
        return bad;
      return "";
    }
    case Range::Kind::any:
      return "";
  }
  return bad;
}

// ---- a flag's value as text (checkpoints, resume.hpp) ----
// CLI11 cannot give a value back exactly: it writes a double with 6 digits, and reads one with strtold
// and then rounds to double, which can round twice (1 in 10^4 shortest texts of a double do not read
// back to it). So each flag also keeps these two functions of its own variable.

// One value from text, checked by the flag's validator (its range), which renames a placement as on the
// command line; a list element by element. Throws gs::Error with what is wrong.
template <class T>
void read_checked(const CLI::Validator& check, std::string text, T& v) {
  if (const std::string why = check(text); !why.empty()) throw Error(why);
  if constexpr (std::is_same_v<T, std::string>) v = text;
  else if constexpr (std::is_same_v<T, double>) v = std::strtod(text.c_str(), nullptr);  // reads exact_text back
  else std::from_chars(text.data(), text.data() + text.size(), v);
}
template <class T>
void read_checked(const CLI::Validator& check, const std::string& text, std::vector<T>& v) {
  v.clear();
  for (std::size_t from = 0, comma = 0; comma != std::string::npos; from = comma + 1) {
    comma = text.find(',', from);
    read_checked(check, text.substr(from, comma - from), v.emplace_back());
  }
}

struct Variable {
  std::function<std::string()> text;  // the value, as exact_text writes it
  // `text` read as the flag reads it, written back as exact_text; with `store` also into the variable.
  std::function<std::string(const std::string& text, bool store)> read;
  bool real = false;  // a double or a list of them: finish_cli reads it again after CLI11 (see there)
};

std::map<const CLI::Option*, Variable>& variables() {
  static std::map<const CLI::Option*, Variable> m;
  return m;
}

template <class T>
Variable variable(T& value, const CLI::Validator& check) {
  auto read = [&value, check](const std::string& text, bool store) {
    T v{};
    // A string flag's "" is its "none" (--text: the Markov corpus), which no range holds.
    if (!std::is_same_v<T, std::string> || !text.empty()) read_checked(check, text, v);
    if (store) value = v;
    return exact_text(v);
  };
  return {[&value] { return exact_text(value); }, read,
          std::is_same_v<T, double> || std::is_same_v<T, std::vector<double>>};
}

const Variable& variable_of(const CLI::App& app, const std::string& name) {
  const auto it = variables().find(app.get_option_no_throw(name));
  if (it == variables().end()) throw Error(name + " is not a flag of " + app.get_name() + " added with add_flag");
  return it->second;
}

std::string with_range(const std::string& help, const std::string& range) {
  return range.empty() ? help : help + " [" + range + "]";
}

// The flag with its range: checked on every element, stated in --help.
template <class T>
CLI::Option* add(CLI::App& app, const std::string& name, T& value, const std::string& help, double type_max) {
  const Range& range = range_of(app.get_name(), name);
  CLI::Option* option = app.add_option(name, value, with_range(help, text_of(range, type_max)));
  const CLI::Validator check([&range, type_max](std::string& v) { return problem(range, type_max, v); }, "", "range");
  variables()[option] = variable(value, check);
  if (range.kind == Range::Kind::placement)
    option->transform(check);
  else
    option->check(check);
  return option->capture_default_str();
}

}  // namespace

std::string flag_value(const CLI::App& app, const std::string& name) { return variable_of(app, name).text(); }

std::string canonical_flag_value(const CLI::App& app, const std::string& name, const std::string& text) {
  return variable_of(app, name).read(text, false);
}

void set_flag(CLI::App& app, const std::string& name, const std::string& text) { variable_of(app, name).read(text, true); }

void describe(CLI::App& app, const std::string& name, const std::string& help) {
  app.get_option(name)->description(with_range(help, text_of(range_of(app.get_name(), name), no_limit)));
}

CLI::Option* add_flag(CLI::App& app, const std::string& name, std::size_t& v, const std::string& help) {
  return add(app, name, v, help, 1.8e19);
}
CLI::Option* add_flag(CLI::App& app, const std::string& name, unsigned& v, const std::string& help) {
  return add(app, name, v, help, std::numeric_limits<unsigned>::max());
}
CLI::Option* add_flag(CLI::App& app, const std::string& name, int& v, const std::string& help) {
  return add(app, name, v, help, std::numeric_limits<int>::max());
}
CLI::Option* add_flag(CLI::App& app, const std::string& name, double& v, const std::string& help) {
  return add(app, name, v, help, no_limit);
}
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::string& v, const std::string& help) {
  return add(app, name, v, help, no_limit);
}
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::vector<std::size_t>& v, const std::string& help) {
  return add(app, name, v, help, 1.8e19)->delimiter(',');
}
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::vector<double>& v, const std::string& help) {
  return add(app, name, v, help, no_limit)->delimiter(',');
}
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::vector<std::string>& v, const std::string& help) {
  return add(app, name, v, help, no_limit)->delimiter(',');
}

void finish_cli(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (option == app.get_help_ptr() || option->get_type_size() == 0) continue;
    option->capture_default_str();
    if (option->get_default_str().empty()) option->default_str("(none)");
  }
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    const std::string name = std::filesystem::path(a->get_name()).filename().string();
    std::string line = name + ": error: " + e.what();
    for (char& c : line)
      if (c == '\n') c = ' ';
    return line + " (" + name + " --help lists the flags)\n";
  });
  // CLI11 reads a double with strtold and rounds that to double: rounded twice, some decimal texts come
  // out 1 ulp from the double they name (--lr 4.91e-6 as 4.9100000000000004e-06). So a real flag given
  // is read again from its text, with strtod, which rounds once.
  app.final_callback([&app] {
    for (const CLI::Option* option : app.get_options()) {
      const auto it = variables().find(option);
      if (it == variables().end() || !it->second.real || option->count() == 0) continue;
      std::string text;
      for (const std::string& r : option->results()) text += (text.empty() ? "" : ",") + r;
      it->second.read(text, true);
    }
  });
}

// ---- placements ----

std::vector<std::string> default_placements() { return nn::placement_presets(); }

// ---- the model flags ----

nn::ModelConfig ModelOptions::config() const {
  nn::ModelConfig c;
  c.vocab = vocab;
  c.context = seq;
  c.d_model = d_model;
  c.heads = heads;
  c.layers = layers;
  c.d_ff = d_ff;
  nn::apply_placement(c, placement);
  set_axes(c);
  c.init = nn::parse_init(init);
  c.seed = seed;
  return c;
}

void ModelOptions::set_axes(nn::ModelConfig& c) const {
  if (!norm.empty()) c.norm = nn::parse_norm(norm);
  if (!residual.empty()) c.residual = nn::parse_residual(residual);
  if (!mixln_post.empty()) c.mixln_post = std::stoul(mixln_post);  // a whole number: the flag's range checked it
  c.dyt_alpha = dyt_alpha;
  c.qk_norm = nn::parse_qk_norm(qk_norm);
}

std::string ModelOptions::with_axes(const std::string& spec) const {
  nn::ModelConfig c;
  c.layers = layers;
  nn::apply_placement(c, spec);
  set_axes(c);
  const std::string why = nn::refusal(c);
  if (!why.empty()) throw Error(nn::placement_name(c) + (norm.empty() ? "" : " (--norm " + norm + ")") +
                                (residual.empty() ? "" : " (--residual " + residual + ")") + ": " + why);
  return nn::placement_name(c);
}

std::string ModelOptions::problem() const {
  if (d_model % heads != 0)
    return "--heads " + std::to_string(heads) + " does not divide --d-model " + std::to_string(d_model);
  try {
    with_axes(placement);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

ModelOptions stability_model() {
  ModelOptions o;
  o.vocab = 16, o.layers = 6, o.d_model = 32, o.heads = 2, o.seq = 16, o.batch = 16;
  return o;
}

void add_model_flags(CLI::App& app, ModelOptions& o) {
  add_flag(app, "--placement", o.placement, "normalization placement");
  add_flag(app, "--norm", o.norm, "the norm of every placement given, in place of its own (docs/placements.md)");
  add_flag(app, "--residual", o.residual, "the residual weighting of every placement given, in place of its own");
  add_flag(app, "--mixln-post", o.mixln_post, "mixln: the number K of Post-LN blocks (default: L/4 rounded half up)")
      ->type_name("UINT");
  add_flag(app, "--dyt-alpha", o.dyt_alpha, "dyt: the initial alpha of every DyT");
  add_flag(app, "--layers", o.layers, "number of residual blocks");
  add_flag(app, "--d-model", o.d_model, "model width d");
  add_flag(app, "--heads", o.heads, "attention heads (must divide d-model)");
  add_flag(app, "--d-ff", o.d_ff, "MLP hidden width");
  add_flag(app, "--seq", o.seq, "sequence length T (also the model's context)");
  add_flag(app, "--batch", o.batch, "batch size B");
  add_flag(app, "--vocab", o.vocab, "vocabulary size (a text file sets its own)");
  add_flag(app, "--seed", o.seed, "random seed of the initialisation and the data");
  add_flag(app, "--init", o.init, "initialisation");
  add_flag(app, "--qk-norm", o.qk_norm, "per-head norm of every attention's queries and keys over d_head: none, "
           "layer (LayerNorm) or rms (RMSNorm), one set for q and one for k per block (docs/stability.md)");
}

std::vector<std::string> model_flags_given(const CLI::App& app) {
  std::vector<std::string> given;
  for (const char* flag : {"--placement", "--norm", "--residual", "--mixln-post", "--dyt-alpha", "--layers", "--d-model", "--heads", "--d-ff", "--seq", "--batch", "--vocab",
                           "--seed", "--init", "--qk-norm"})
    if (app.get_option(flag)->count() > 0) given.emplace_back(flag);
  return given;
}

}  // namespace gs::experiments
