// NumPy's .npy 1.0, float64 and int64, by xtensor. xt::load_npy trusts the file (it allocates what the
// header asks for and misses a truncation), so a reader names the shape it expects: the file must be
// exactly what xt::dump_npy writes for that shape, its size checked before anything is allocated.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "engine/array.hpp"

namespace gs::nn {

std::string npy_bytes(const Array& array);
std::string npy_bytes(const IndexArray& array);
Array parse_npy_f8(std::string_view bytes, const std::string& file, const Shape& expected);
IndexArray parse_npy_i8(std::string_view bytes, const std::string& file, const Shape& expected);
Array read_npy_f8(const std::filesystem::path& path, const Shape& expected);
IndexArray read_npy_i8(const std::filesystem::path& path, const Shape& expected);

}  // namespace gs::nn
