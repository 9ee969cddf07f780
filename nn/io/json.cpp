#include "nn/io/json.hpp"

#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::nn {

using nlohmann::json;

std::string json_error(const std::string& file, const std::exception& e) {
  const std::string what = e.what();
  const std::size_t end = what.rfind("[json.exception.", 0) == 0 ? what.find("] ") : std::string::npos;
  return file + ": " + (end == std::string::npos ? what : what.substr(end + 2));
}

json parse_json(std::string_view text, const std::string& file) {
  std::vector<std::set<std::string>> keys;  // of each open container (an array's stays empty)
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      if (depth >= static_cast<int>(json_max_depth))  // depth: the containers open around this one
        throw Error(file + ": invalid JSON: nesting deeper than " + std::to_string(json_max_depth) + " levels");
      keys.emplace_back();
    } else if (event == E::object_end || event == E::array_end) {
      keys.pop_back();
    } else if (event == E::key && !keys.back().insert(parsed.get<std::string>()).second) {
      throw Error(file + ": invalid JSON: duplicate key " + parsed.dump(-1, ' ', false, json::error_handler_t::replace) +
                  (depth == 1 ? " at the top level" : ""));
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& e) {
    throw Error(json_error(file + ": invalid JSON", e));
  }
}

json read_json_file(const std::filesystem::path& path, std::size_t max_bytes) {
  return parse_json(read_file(path, max_bytes), path.string());
}

}  // namespace gs::nn
