// SHA-256 (OpenSSL's) as 64 lowercase hex digits, what `sha256sum FILE` prints: manifests list one per
// file, and a training run records its data file's, so that a resumed run can tell it trains on the same bytes.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace gs::nn {

std::string sha256_hex(std::string_view bytes);
std::string sha256_of_file(const std::filesystem::path& path);  // a regular file's; gs::Error naming it otherwise

}  // namespace gs::nn
