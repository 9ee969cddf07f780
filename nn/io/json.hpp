// Just enough JSON for the small config files gradscope writes by hand (checkpoints, dumps): a value
// type, a strict parser that names the file on any error, and string quoting for writers.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gs::nn {

struct Json {
  enum class Type { null, boolean, number, string, array, object };
  Type type = Type::null;
  bool boolean = false;
  double number = 0.0;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;

  bool has(const std::string& key) const { return type == Type::object && object.count(key) > 0; }
  // The member `key` of an object; throws gs::Error naming `file` if there is none.
  const Json& at(const std::string& key, const std::string& file) const;
  // The value as a non-negative integer / a string; throws naming `file` and `what` otherwise.
  std::size_t as_size(const std::string& what, const std::string& file) const;
  const std::string& as_string(const std::string& what, const std::string& file) const;
};

// Parses a whole document; `file` names the source in error messages.
Json parse_json(std::string_view text, const std::string& file);

// "text" with ", \ and control characters escaped.
std::string json_quote(std::string_view text);

// Members already encoded as JSON text, written as an object, one member per line:
//   {
//     "vocab": 64,
//     "placement": "pre"
//   }
using JsonMembers = std::vector<std::pair<std::string, std::string>>;
std::string json_object(const JsonMembers& members, int indent = 0);

}  // namespace gs::nn
