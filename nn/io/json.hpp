// JSON for gradscope's files, read and written with nlohmann-json (only .cpp files include its full
// header). nlohmann is built with JSON_DIAGNOSTICS (nn/CMakeLists.txt), so that its errors name the
// member's path: "(/train/flags/--lr) type must be string, but is number". parse_json is nlohmann's
// parser with a callback that refuses what nlohmann lets through: a key given twice in one object, and
// nesting deeper than json_max_depth (copying and printing a value recurse). A reader calls nlohmann's
// own at() and get<T>() and catches their exception once, as one gs::Error naming the file (json_error).
#pragma once

#include <cstddef>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace gs::nn {

inline constexpr std::size_t json_max_depth = 64;

nlohmann::json parse_json(std::string_view text, const std::string& file);  // gs::Error "FILE: invalid JSON: ..."
nlohmann::json read_json_file(const std::filesystem::path& path, std::size_t max_bytes);  // read_file, then parse_json

// "FILE: WHAT" for an exception e of nlohmann, WHAT its message without the "[json.exception.type_error.302] ".
std::string json_error(const std::string& file, const std::exception& e);

}  // namespace gs::nn
