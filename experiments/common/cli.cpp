#include "experiments/common/cli.hpp"

#include <filesystem>
#include <string>

namespace gs::experiments {

const CLI::Validator positive(
    [](std::string& text) {
      double v = 0.0;
      return CLI::detail::lexical_cast(text, v) && v > 0.0 ? std::string() : "'" + text + "' is not a positive number";
    },
    "POSITIVE");

void finish_cli(CLI::App& app) {
  for (CLI::Option* option : app.get_options())
    if (option != app.get_help_ptr() && option->get_type_size() != 0 && option->get_default_str().empty())
      option->default_str("(none)");
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    const std::string name = std::filesystem::path(a->get_name()).filename().string();
    std::string line = name + ": error: " + e.what();
    for (char& c : line)
      if (c == '\n') c = ' ';
    return line + " (" + name + " --help lists the flags)\n";
  });
}

}  // namespace gs::experiments
