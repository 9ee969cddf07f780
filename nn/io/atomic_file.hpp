// Whole files. write_file_atomically writes "<path>.tmp-<pid>", fsyncs it, renames it over path and
// fsyncs the directory: a reader, or a run killed at any moment, sees the old file or the whole new one.
// read_file reads only a regular file of at most max_bytes (not a FIFO, /dev/zero or a larger file).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace gs::nn {

inline constexpr std::size_t default_read_limit = std::size_t{1} << 30;  // 1 GiB

std::string read_file(const std::filesystem::path& path, std::size_t max_bytes = default_read_limit);
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);
std::filesystem::path temporary_name(const std::filesystem::path& path);  // "<path>.tmp-<pid>"
void fsync_directory(const std::filesystem::path& dir);  // its entries (a rename into it) to the disk
std::string sha256_hex(std::string_view bytes);  // OpenSSL's, as `sha256sum FILE` prints it
std::string sha256_of_file(const std::filesystem::path& path);

}  // namespace gs::nn
