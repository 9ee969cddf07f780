#include "experiments/lib/flags.hpp"

#include <CLI/CLI.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "engine/error.hpp"
#include "experiments/lib/grid.hpp"  // label: a double in its shortest exact form

namespace gs::experiments {
namespace {

std::string listed(const std::vector<std::string>& names, const char* separator = ", ") {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : separator) + n;
  return s;
}

std::string with_zero(const std::string& range, const std::string& zero) { return zero.empty() ? range : range + "; " + zero; }

// A validator from a function that returns "" or what is wrong with a value, described by its range.
CLI::Validator validator(const std::string& range, std::function<std::string(std::string&)> problem) {
  return CLI::Validator(std::move(problem), range);
}

CLI::Validator whole(const Whole& w, std::uint64_t type_max) {
  const std::uint64_t hi = std::min(w.hi, type_max);
  const std::string range = "a whole number " + (hi < Whole::no_max ? "in [" + std::to_string(w.lo) + ", " +
                                                                          std::to_string(hi) + "]"
                                                                    : ">= " + std::to_string(w.lo));
  const bool own_max = w.hi < Whole::no_max;  // the flag's own limit, not only its type's
  return validator(with_zero(range, w.zero), [w, hi, range, own_max](std::string& text) -> std::string {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)  // no sign, no 0x
      return "'" + text + "' is not " + range;
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc::result_out_of_range || v > hi)
      return own_max ? "'" + text + "' is too large for " + range
                     : "'" + text + "' is too large: the most it may be is " + std::to_string(hi);
    if (v < w.lo) return "'" + text + "' is not " + range;
    text = std::to_string(v);  // "010" as 10: CLI11 would read a leading 0 as octal
    return "";
  });
}

CLI::Validator real(const RealRange& r) {
  std::string range = std::string("a finite number ") + (r.open ? "> " : ">= ") + label(r.lo);
  if (r.hi < std::numeric_limits<double>::infinity()) range += " and <= " + label(r.hi);
  return validator(with_zero(range, r.zero), [r, range](std::string& text) -> std::string {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    const bool decimal = !text.empty() && text.find_first_not_of("0123456789+-.eE") == std::string::npos;
    const bool ok = decimal && end == text.c_str() + text.size() && std::isfinite(v) && (r.open ? v > r.lo : v >= r.lo) &&
                    v <= r.hi;
    return ok ? "" : "'" + text + "' is not " + range;
  });
}

std::string with_range(const std::string& help, const std::string& range) {
  return range.empty() ? help : help + " [" + range + "]";
}

// The range goes into the help text; the check runs on every value (each element of a list), and may
// rewrite it (a placement, to its own name).
CLI::Option* checked(CLI::Option* option, CLI::Validator check) {
  option->description(with_range(option->get_description(), check.get_description()));
  option->transform(check.description(""));  // not beside the type name as well
  return option->capture_default_str();
}

}  // namespace

unsigned max_jobs() { return 4 * std::max(1u, std::thread::hardware_concurrency()); }

CLI::Validator one_of(const std::vector<std::string>& names) {
  return CLI::IsMember(names).description("one of " + listed(names));
}

CLI::Validator placement() {
  const std::string range = "a placement: a preset (" + listed(default_placements()) + ", sandwich) or P/N/R (docs/placements.md)";
  return validator(range, [](std::string& text) -> std::string {
    try {
      nn::ModelConfig c;
      nn::apply_placement(c, text);
      text = nn::placement_name(c);  // its own name: "sandwich" -> "peri", "pre/layer/none" -> "pre"
      return "";
    } catch (const std::exception& e) {
      return e.what();
    }
  });
}

CLI::Validator existing_directory() { return CLI::Validator(CLI::ExistingDirectory).description("an existing directory"); }

CLI::Validator regular_file(std::size_t bytes) {
  const std::string mib = std::to_string(bytes >> 20) + " MiB";
  return validator("a regular file of at most " + mib, [bytes, mib](std::string& text) -> std::string {
    struct stat s {};
    if (::stat(text.c_str(), &s) != 0 || !S_ISREG(s.st_mode)) return "'" + text + "' is not a regular file of at most " + mib;
    if (static_cast<std::size_t>(s.st_size) > bytes)
      return "'" + text + "' has " + std::to_string(s.st_size) + " bytes, more than the " + mib + " this flag reads";
    return "";
  });
}

CLI::Validator shard() {
  const std::string range = "K/N: shard K of N, 1 <= K <= N";
  return validator(range, [range](std::string& text) -> std::string {
    const std::size_t slash = text.find('/');
    const CLI::Validator count = whole(Whole{1}, 1'000'000'000);
    std::string k = text.substr(0, slash), n = slash == std::string::npos ? "" : text.substr(slash + 1);
    if (slash == std::string::npos || !count(k).empty() || !count(n).empty() || std::stoul(k) > std::stoul(n))
      return "'" + text + "' is not " + range;
    return "";
  });
}

CLI::Option* add_flag(CLI::App& app, const std::string& name, std::size_t& v, const std::string& help, const Whole& range) {
  return checked(app.add_option(name, v, help), whole(range, Whole::no_max));
}
CLI::Option* add_flag(CLI::App& app, const std::string& name, unsigned& v, const std::string& help, const Whole& range) {
  return checked(app.add_option(name, v, help), whole(range, std::numeric_limits<unsigned>::max()));
}
CLI::Option* add_flag(CLI::App& app, const std::string& name, int& v, const std::string& help, const Whole& range) {
  return checked(app.add_option(name, v, help), whole(range, std::numeric_limits<int>::max()));
}
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::vector<std::size_t>& v, const std::string& help,
                      const Whole& range) {
  return checked(app.add_option(name, v, help)->delimiter(','), whole(range, Whole::no_max));
}

// A real flag is stored from its text by strtod (RealRange, flags.hpp); the rest as CLI11's add_option does.
CLI::Option* add_flag(CLI::App& app, const std::string& name, double& v, const std::string& help, const RealRange& range) {
  auto store = [&v](const CLI::results_t& texts) { return v = std::strtod(texts.front().c_str(), nullptr), true; };
  CLI::Option* option = app.add_option(name, store, help, false, [&v] { return CLI::detail::to_string(v); });
  return checked(option->type_name("FLOAT")->type_size(1)->expected(1), real(range));
}
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::vector<double>& v, const std::string& help,
                      const RealRange& range) {
  auto store = [&v](const CLI::results_t& texts) {
    v.clear();
    for (const std::string& text : texts) v.push_back(std::strtod(text.c_str(), nullptr));
    return true;
  };
  CLI::Option* option = app.add_option(name, store, help, false, [&v] { return CLI::detail::to_string(v); });
  option->type_name("FLOAT")->type_size(1)->expected(CLI::detail::expected_max_vector_size)->delimiter(',');
  return checked(option, real(range));
}

CLI::Option* add_flag(CLI::App& app, const std::string& name, std::string& v, const std::string& help,
                      const CLI::Validator& range) {
  return checked(app.add_option(name, v, help), range);
}
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::vector<std::string>& v, const std::string& help,
                      const CLI::Validator& range) {
  return checked(app.add_option(name, v, help)->delimiter(','), range);
}
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::string& v, const std::string& help) {
  return app.add_option(name, v, help)->capture_default_str();
}
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::vector<std::string>& v, const std::string& help) {
  return app.add_option(name, v, help)->delimiter(',')->capture_default_str();
}

void describe(CLI::App& app, const std::string& name, const std::string& help) {
  CLI::Option* option = app.get_option(name);
  // The range add_flag appended: the last bracket at the end, "... [a whole number in [1, 1000]]".
  const std::string old = option->get_description();
  std::size_t start = old.size();
  for (int depth = 0; start > 0 && old.back() == ']';) {
    const char c = old[--start];
    depth += c == ']' ? 1 : c == '[' ? -1 : 0;
    if (depth == 0) break;
  }
  option->description(start == old.size() ? help : help + " " + old.substr(start));
}

std::string flag_text(const CLI::App& app, const std::string& name) {
  const CLI::Option* option = app.get_option(name);
  return option->count() > 0 ? listed(option->results(), ",") : option->get_default_str();
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
  add_flag(app, "--placement", o.placement, "normalization placement", placement());
  add_flag(app, "--norm", o.norm, "the norm of every placement given, in place of its own (docs/placements.md)",
           one_of(nn::norm_names()));
  add_flag(app, "--residual", o.residual, "the residual weighting of every placement given, in place of its own",
           one_of(nn::residual_names()));
  add_flag(app, "--mixln-post", o.mixln_post, "mixln: the number K of Post-LN blocks (default: L/4 rounded half up)",
           whole(Whole{0}, Whole::no_max))
      ->type_name("UINT");
  add_flag(app, "--dyt-alpha", o.dyt_alpha, "dyt: the initial alpha of every DyT", RealRange::above(0));
  add_flag(app, "--layers", o.layers, "number of residual blocks", Whole{1});
  add_flag(app, "--d-model", o.d_model, "model width d", Whole{1});
  add_flag(app, "--heads", o.heads, "attention heads (must divide d-model)", Whole{1});
  add_flag(app, "--d-ff", o.d_ff, "MLP hidden width", Whole{0, Whole::no_max, "0: 4 x --d-model"});
  add_flag(app, "--seq", o.seq, "sequence length T (also the model's context)", Whole{1});
  add_flag(app, "--batch", o.batch, "batch size B", Whole{1});
  add_flag(app, "--vocab", o.vocab, "vocabulary size (a text file sets its own)", Whole{2, 1 << 20});
  add_flag(app, "--seed", o.seed, "random seed of the initialisation and the data", Whole{0});
  add_flag(app, "--init", o.init, "initialisation", one_of(nn::init_names()));
  add_flag(app, "--qk-norm", o.qk_norm, "per-head norm of every attention's queries and keys over d_head: none, "
           "layer (LayerNorm) or rms (RMSNorm), one set for q and one for k per block (docs/stability.md)",
           one_of(nn::qk_norm_names()));
}

}  // namespace gs::experiments
