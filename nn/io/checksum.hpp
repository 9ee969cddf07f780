// SHA-256 (OpenSSL's), as 64 lowercase hex digits: what `sha256sum FILE` prints. Checkpoints and dumps
// record one per file in their manifest (nn/io/output_dir.hpp); a training run records the one of its
// data file, so that a resumed run can tell whether it trains on the same bytes.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace gs::nn {

std::string sha256_hex(std::string_view bytes);

// The SHA-256 of a regular file's bytes, read in 1 MiB pieces (any size). Throws gs::Error naming the
// file if it cannot be read or is not a regular file (a directory, a FIFO, a device).
std::string sha256_of_file(const std::filesystem::path& path);

}  // namespace gs::nn
