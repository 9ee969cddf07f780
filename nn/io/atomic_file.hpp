// Writing a file atomically: the contents go to a temporary file beside the target, which is then
// renamed over it. A rename within one directory is atomic on POSIX, so a reader (or a run that is
// killed half way) sees either the old file or the complete new one, never a half-written file.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace gs::nn {

// Writes `contents` to `path` through "<path>.tmp-<pid>"; throws gs::Error naming the file.
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

// Writes a directory as a whole: fill(tmp) writes every file into a fresh "<dir>.tmp-<pid>", which
// then takes dir's place (an existing dir is renamed to "<dir>.old-<pid>" first and removed after).
// A run killed at any point leaves dir either as it was or complete (or, between the two renames,
// under the .old name). If fill throws, the temporary directory is removed and dir is untouched.
void write_directory_atomically(const std::filesystem::path& dir,
                                const std::function<void(const std::filesystem::path&)>& fill);

// Reads a whole file as bytes; throws gs::Error naming the file if it cannot be opened.
std::string read_file(const std::filesystem::path& path);

}  // namespace gs::nn
