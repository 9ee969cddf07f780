// JSON for gradscope's files, read and written with nlohmann-json (only .cpp files include its full
// header). parse_json is nlohmann's parser with a callback that refuses what it lets through: a key
// given twice in one object, and nesting deeper than json_max_depth (2,000,000 '[' stop at the 65th).
// JsonField reads members with checked conversions. Every refusal is one gs::Error naming the file and
// the line (nlohmann's message), the key or the member's path: "layers": 1e30, -1, 2.5 or "5" for a count is
//   ck/config.json: layers is 1e+30, expected an integer from 0 to 18446744073709551615
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gs::nn {

inline constexpr std::size_t json_max_depth = 64;

nlohmann::json parse_json(std::string_view text, const std::string& file);
nlohmann::json read_json_file(const std::filesystem::path& path, std::size_t max_bytes);  // read_file, then parse_json

// A value inside a parsed document (which must outlive it), with its file and path (train.lr, p["x.w"][1]).
class JsonField {
 public:
  JsonField(const nlohmann::json& value, std::string file, std::string path = "");

  bool is_object() const;
  bool has(const std::string& key) const;      // an object with that member
  JsonField at(const std::string& key) const;  // throws if missing or if this is no object
  JsonField at(std::size_t index) const;       // throws if out of range or if this is no array
  std::size_t size() const;                    // an array's elements or an object's members
  std::vector<std::string> keys() const;       // an object's member names, sorted

  std::size_t as_size(std::size_t max = static_cast<std::size_t>(-1)) const;  // an integer in [0, max]
  std::size_t as_size_in(std::size_t min, std::size_t max) const;
  unsigned as_unsigned() const;
  double as_double() const;  // always finite: JSON has no NaN
  bool as_bool() const;
  const std::string& as_string() const;

  const nlohmann::json& json() const { return *value_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  [[noreturn]] void fail(const std::string& what) const;  // gs::Error "FILE: PATH WHAT"

 private:
  const nlohmann::json* value_;
  std::string file_, path_;
};

}  // namespace gs::nn
