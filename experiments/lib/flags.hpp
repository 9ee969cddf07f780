// The command line of every binary (experiments and benchmarks). A binary states each flag's range
// where it adds the flag, and add_flag checks every value given (each element of a list) when the
// command line is parsed, and appends the range to the flag's --help line:
//   add_flag(app, "--layers", o.layers, "number of residual blocks", Whole{1});
//   add_flag(app, "--lr", o.lr, "peak learning rate", RealRange::above(0));
//   add_flag(app, "--norm", o.norm, "the norm of every placement", one_of(nn::norm_names()));
// A bad flag or value is one line on stderr naming it:
//   warmup: error: --lrs: 'nan' is not a finite number > 0 (warmup --help lists the flags)
// CLI11 is only declared here (it costs seconds per file that includes it): harness.hpp includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "nn/config.hpp"

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace gs::experiments {

// A whole number in [lo, hi], digits only: "-5" is refused, not wrapped around to 2^64 - 5 as CLI11 2.1
// reads it (nor "0x10", "+5"). `zero` says what 0 means where it is a special value ("0: none").
struct Whole {
  static constexpr std::uint64_t no_max = 18'000'000'000'000'000'000u;  // a round number below 2^64
  Whole(std::uint64_t lo, std::uint64_t hi = no_max, std::string zero = "") : lo(lo), hi(hi), zero(std::move(zero)) {}
  std::uint64_t lo;
  std::uint64_t hi;  // an unsigned flag: at most its type's 4294967295 too
  std::string zero;
};

// A finite number in [lo, hi] (or (lo, hi] when `open`); NaN, inf and what strtod does not read whole
// are refused. A real flag's text is read with strtod, which rounds once to the double it names (CLI11
// reads it with strtold and rounds that again: 1 in 10^4 decimal texts would come out 1 ulp off).
struct RealRange {
  double lo = 0.0;
  bool open = false;
  double hi = std::numeric_limits<double>::infinity();
  std::string zero;
  static RealRange above(double lo) { return {lo, true, std::numeric_limits<double>::infinity(), ""}; }
  static RealRange at_least(double lo, std::string zero = "") {
    return {lo, false, std::numeric_limits<double>::infinity(), std::move(zero)};
  }
  static RealRange within(double lo, double hi) { return {lo, false, hi, ""}; }
};

// The validators of text flags (CLI11's or small ones of ours), each with its range as its description.
CLI::Validator one_of(const std::vector<std::string>& names);  // CLI::IsMember, "one of a, b, c"
// A preset (nn::placement_presets(), or sandwich) or P/N/R, rewritten to its own name ("sandwich" ->
// "peri", "pre/layer/none" -> "pre"); what nn::apply_placement refuses, with its reason.
CLI::Validator placement();
CLI::Validator existing_directory();            // CLI::ExistingDirectory
CLI::Validator regular_file(std::size_t bytes);  // of at most `bytes`: what its reader reads
CLI::Validator shard();                          // K/N with 1 <= K <= N

// The most --jobs may be: 4 x the hardware threads (a thread per job; more only wait for a core).
unsigned max_jobs();

// Adds the flag `name` writing into `value`; its current value is the default --help shows. A list
// flag takes comma-separated values, each checked.
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::size_t& value, const std::string& help, const Whole& range);
CLI::Option* add_flag(CLI::App& app, const std::string& name, unsigned& value, const std::string& help, const Whole& range);
CLI::Option* add_flag(CLI::App& app, const std::string& name, int& value, const std::string& help, const Whole& range);
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::vector<std::size_t>& value, const std::string& help,
                      const Whole& range);
CLI::Option* add_flag(CLI::App& app, const std::string& name, double& value, const std::string& help, const RealRange& range);
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::vector<double>& value, const std::string& help,
                      const RealRange& range);
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::string& value, const std::string& help,
                      const CLI::Validator& range);
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::vector<std::string>& value, const std::string& help,
                      const CLI::Validator& range);
// A text flag of any value (a file to write; a list the binary reads itself, and refuses there).
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::string& value, const std::string& help);
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::vector<std::string>& value, const std::string& help);

// Gives an added flag another description (a binary's own meaning of a shared flag); its range stays.
void describe(CLI::App& app, const std::string& name, const std::string& help);

// A flag's value as given on the command line, else its default as --help shows it ("0.9", "a,b").
std::string flag_text(const CLI::App& app, const std::string& name);

// Before parsing: every default re-read from its variable (so a binary may change defaults after
// adding the flags), "(none)" where there is none, and the one-line error format above.
void finish_cli(CLI::App& app);

// ---- placements ----
// A placement's name becomes a model in one place, nn::apply_placement (nn/config.hpp): a preset
// (post, pre, peri or sandwich, deepnorm, rezero) or a triple P/N/R.

// The placements the grids measure by default, in print order: nn's presets.
std::vector<std::string> default_placements();

// ---- the model flags: --placement --layers --d-model --heads --d-ff --seq --batch --vocab --seed --init ----

struct ModelOptions {
  std::size_t vocab = 64;
  std::size_t layers = 2;
  std::size_t d_model = 64;
  std::size_t heads = 4;
  std::size_t d_ff = 0;           // 0: 4 * d_model
  std::size_t seq = 32;           // T, the training sequence length; also the model's context
  std::size_t batch = 16;         // B
  std::string placement = "pre";
  std::string norm;               // --norm: "" keeps each placement's own norm
  std::string residual;           // --residual: "" keeps each placement's own
  std::string mixln_post;         // --mixln-post K: "" is ModelConfig's default, L/4 rounded half up
  double dyt_alpha = 0.5;
  std::string qk_norm = "none";   // --qk-norm: none, layer or rms (nn::QkNorm)
  std::string init = "xavier";
  unsigned seed = 0;              // the model's initialisation, and whatever else the binary seeds

  nn::ModelConfig config() const;  // context = seq; placement and init parsed
  // `spec` (a preset or P/N/R) with --norm and --residual in place of its own, by its canonical name
  // ("post" with --norm rms: "post/rms/none"); throws gs::Error when the model refuses the combination.
  std::string with_axes(const std::string& spec) const;
  void set_axes(nn::ModelConfig& config) const;  // --norm, --residual, --mixln-post, --dyt-alpha, --qk-norm into config
  // "" or "; qk-norm rms": what a setup line adds for --qk-norm.
  std::string qk_note() const { return qk_norm == "none" ? "" : "; qk-norm " + qk_norm; }
  // "" if the flags can build a model, else what is wrong ("--heads 3 does not divide --d-model 64").
  std::string problem() const;
};

// The model that warmup and dynamics train: vocab 16, 6 layers, d 32, 2 heads, B 16, T 16 -- deep
// enough for Post-LN's trouble to show, small enough for an 80-run grid in a few minutes.
ModelOptions stability_model();

void add_model_flags(CLI::App& app, ModelOptions& options);

}  // namespace gs::experiments
