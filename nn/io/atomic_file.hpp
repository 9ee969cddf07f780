// Reading and writing whole files, with the guarantees every gradscope output relies on.
//
// write_file_atomically writes the contents to a temporary file beside the target, flushes it to the
// disk (fsync), renames it over the target and flushes the directory. A rename within one directory is
// atomic on POSIX, so a reader, or a run killed at any moment, sees either the old file or the complete
// new one, never a half-written file; after the call returns, a power cut keeps the new one. A write
// that is interrupted leaves "<target>.tmp-<pid>" behind, which the next run of the same output removes
// (nn/io/output_dir.hpp). Directories are written as a whole by nn/io/output_dir.hpp.
//
// read_file reads only regular files, up to a size limit: a directory, a FIFO, /dev/zero or a file over
// the limit is refused with one line naming the file (and the limit) before anything is allocated.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace gs::nn {

inline constexpr std::size_t default_read_limit = std::size_t{1} << 30;  // 1 GiB

// A whole regular file as bytes; throws gs::Error naming the file if it cannot be opened, is not a
// regular file, or is larger than max_bytes (the error names the limit).
std::string read_file(const std::filesystem::path& path, std::size_t max_bytes = default_read_limit);

// At most the first max_bytes of a regular file (to recognise a file by how it begins).
std::string read_file_head(const std::filesystem::path& path, std::size_t max_bytes);

// Writes `contents` to `path` through "<path>.tmp-<pid>", with fsync before and after the rename;
// throws gs::Error naming the file (and removes the temporary file) on any failure.
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

// Creates `path`, which must not exist, and writes `contents`: no temporary name and no fsync. For the
// files of a directory that is written as a whole, then synced and renamed into place at once.
void create_file(const std::filesystem::path& path, std::string_view contents);

// fsync of a directory, so that the names created or renamed in it survive a power cut.
void fsync_directory(const std::filesystem::path& dir);

// "<path>.tmp-<pid>": where this process writes `path` before renaming it into place.
std::filesystem::path temporary_name(const std::filesystem::path& path);

}  // namespace gs::nn
