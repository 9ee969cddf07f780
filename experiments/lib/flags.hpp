// The command line of every binary (experiments and benchmarks). Each flag's range is written once, in
// the table in flags.cpp; add_flag checks it on every value given (each element of a list) when the
// command line is parsed, and --help states it. A bad flag or value is one line on stderr naming it:
//   warmup: error: --lrs: 'nan' is not a finite number > 0 (warmup --help lists the flags)
// Whole numbers are digits only: "-5" is refused, not wrapped around to 2^64 - 5 as CLI11 would.
// CLI11 is only declared here (it costs seconds per file that includes it): harness.hpp includes it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "nn/config.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace gs::experiments {

// Adds the flag `name` writing into `value`; its current value is the default --help shows. The range
// comes from the table (a row "PROGRAM --flag" there overrides "--flag" for that program); a name the
// table lacks throws gs::Error (a programming error). A list flag takes comma-separated values.
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::size_t& value, const std::string& help);
CLI::Option* add_flag(CLI::App& app, const std::string& name, unsigned& value, const std::string& help);
CLI::Option* add_flag(CLI::App& app, const std::string& name, int& value, const std::string& help);
CLI::Option* add_flag(CLI::App& app, const std::string& name, double& value, const std::string& help);
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::string& value, const std::string& help);
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::vector<std::size_t>& value, const std::string& help);
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::vector<double>& value, const std::string& help);
CLI::Option* add_flag(CLI::App& app, const std::string& name, std::vector<std::string>& value, const std::string& help);

// A flag's current value as text that reads back to the same value ("0.01", "1e-08", a list
// comma-separated): what a checkpoint records (resume.hpp).
std::string flag_value(const CLI::App& app, const std::string& name);
// `text` as the flag would read it, written as flag_value writes it ("1e-2" -> "0.01", "sandwich" ->
// "peri"); throws gs::Error with the range if it is outside. set_flag stores it in the flag's variable.
std::string canonical_flag_value(const CLI::App& app, const std::string& name, const std::string& text);
void set_flag(CLI::App& app, const std::string& name, const std::string& text);

// Gives an added flag another description (a binary's own meaning of a shared flag); its range stays.
void describe(CLI::App& app, const std::string& name, const std::string& help);

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
// The model flags that were given on the command line, e.g. {"--layers", "--seq"}.
std::vector<std::string> model_flags_given(const CLI::App& app);

}  // namespace gs::experiments
