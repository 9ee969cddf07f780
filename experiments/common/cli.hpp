// What every binary's command line shares (experiments and benchmarks): one-line errors and a default
// shown for every flag. This header includes CLI11; nn/ and engine/ headers never do.
//
//   CLI::App app{"..."};
//   ... add options ...
//   gs::experiments::finish_cli(app);
//   CLI11_PARSE(app, argc, argv);
#pragma once

#include <CLI/CLI.hpp>

namespace gs::experiments {

// A bad flag or value becomes one line on stderr that names it, and a non-zero exit:
//   gradflow: error: --layers: 'abc' is not a positive number (gradflow --help lists the flags)
// (CLI11 prints two lines by default.) Every option that takes a value and has no default yet gets
// "(none)" as its default in --help, so that the help states every flag's default.
void finish_cli(CLI::App& app);

// A check for counts and sizes: the value parses as a number and is > 0. CLI::PositiveNumber says
// "Value abc not in range 0.000000 to 1797693134862315708145274237317043567980705675258449965989..."
extern const CLI::Validator positive;

}  // namespace gs::experiments
