#include "experiments/lib/resume.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "engine/error.hpp"
#include "experiments/lib/flags.hpp"

namespace gs::experiments {

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

nlohmann::json flag_record(const CLI::App& app, const FlagKinds& kinds) {
  nlohmann::json record = nlohmann::json::object();
  for (const CLI::Option* option : app.get_options()) {
    const std::string name = option->get_name();
    if (option == app.get_help_ptr() || option->get_type_size() == 0 || contains(kinds.not_recorded, name)) continue;
    record[name] = flag_value(app, name);
  }
  return record;
}

void restore_flags(CLI::App& app, const nlohmann::json& recorded, const FlagKinds& kinds, const std::string& checkpoint) {
  const std::string where = "--resume " + checkpoint + ": ";
  for (const auto& [name, value] : recorded.items()) {
    const std::string text = value.get<std::string>();
    const CLI::Option* option = app.get_option_no_throw(name);
    if (!option || contains(kinds.not_recorded, name))
      throw Error(where + "the checkpoint was trained with " + name + " " + text + ", a flag this " + app.get_name() +
                  " does not record (a checkpoint of another gradscope); it cannot be continued exactly");
    const bool given = option->count() > 0;
    if (given && (contains(kinds.free, name) || contains(kinds.checked_by_caller, name))) continue;
    std::string saved;
    try {
      saved = canonical_flag_value(app, name, text);
    } catch (const Error& e) {
      throw Error(where + "the checkpoint's " + name + " " + text + ": " + e.what());
    }
    if (!given) {
      set_flag(app, name, saved);
      continue;
    }
    if (const std::string mine = flag_value(app, name); mine != saved)
      throw Error(where + name + " " + mine + " contradicts the checkpoint, which was trained with " + name + " " + saved +
                  " (leave " + name + " out to continue with " + saved + ")");
  }
  for (const CLI::Option* option : app.get_options()) {
    const std::string name = option->get_name();
    if (option->count() > 0 && !recorded.contains(name) && option != app.get_help_ptr() && !contains(kinds.not_recorded, name) &&
        !contains(kinds.free, name))
      throw Error(where + "the checkpoint does not record " + name + " (its " + app.get_name() +
                  " had no such flag), so a run with " + name + " cannot continue it exactly; leave " + name + " out");
  }
}

}  // namespace gs::experiments
