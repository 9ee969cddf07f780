// JSON for gradscope's files, read and written with nlohmann-json. Its full header is heavy
// (<nlohmann/json.hpp>): only the .cpp files that build or walk a document include it; this header
// needs only the forward declarations of <nlohmann/json_fwd.hpp>.
//
// Reading is strict. parse_json refuses, with a gs::Error that names the file:
//   - anything that is not JSON: NaN, Infinity, +5, 0x10, comments, single quotes, a trailing comma,
//     invalid UTF-8 (nlohmann's lexer; its message gives the line and column);
//   - a number beyond the range of a double (1e400);
//   - a key that appears twice in one object (nlohmann alone would keep the last one);
//   - nesting deeper than json_max_depth (a file of 2,000,000 '[' is refused at the 65th);
//   - anything after the value.
// JsonField then reads members with checked conversions: "layers": 1e30, -1, 2.5 or "5" for a count
// is an error naming the file and the member, never a cast.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gs::nn {

inline constexpr std::size_t json_max_depth = 64;

// Parses a whole document; `file` names the source in error messages.
nlohmann::json parse_json(std::string_view text, const std::string& file);

// Reads a regular file of at most max_bytes (read_file) and parses it.
nlohmann::json read_json_file(const std::filesystem::path& path, std::size_t max_bytes);

// A value inside a parsed document, with what error messages need: the file and the member's path
// (train.lr, parameters["tok_emb.weight"][1]). Every accessor checks the type and the range and throws
// gs::Error naming both, e.g.
//   ckpt/config.json: layers is 1e+30, expected an integer from 0 to 18446744073709551615
// A JsonField refers to its document, which must outlive it.
class JsonField {
 public:
  JsonField(const nlohmann::json& value, std::string file, std::string path = "");

  bool is_object() const;
  bool has(const std::string& key) const;      // true if this is an object with that member
  JsonField at(const std::string& key) const;  // the member; throws if missing or if this is no object
  JsonField at(std::size_t index) const;       // an array's element; throws if out of range or no array
  std::size_t size() const;                    // the number of an array's elements or an object's members
  std::vector<std::string> keys() const;       // an object's member names, sorted

  std::size_t as_size(std::size_t max = static_cast<std::size_t>(-1)) const;  // an integer in [0, max]
  std::size_t as_size_in(std::size_t min, std::size_t max) const;              // an integer in [min, max]
  unsigned as_unsigned() const;                // an integer in [0, UINT_MAX]
  double as_double() const;                    // any number (always finite: JSON has no NaN)
  bool as_bool() const;
  const std::string& as_string() const;

  const nlohmann::json& json() const { return *value_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }  // "" for the whole document
  // Throws gs::Error "FILE: PATH WHAT" (or "FILE: the document WHAT").
  [[noreturn]] void fail(const std::string& what) const;

 private:
  const nlohmann::json* value_;
  std::string file_, path_;
};

}  // namespace gs::nn
