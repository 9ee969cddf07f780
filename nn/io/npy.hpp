// NumPy's .npy 1.0, gs::Real (float64, or float32 in a float32 build) and int64, by xtensor. xt::load_npy trusts the file (it allocates what the
// header asks for and misses a truncation), so a reader names the shape it expects: the file must be
// exactly what xt::dump_npy writes for that shape, its size checked before anything is allocated.
// A file of the other precision is refused ("its header is not that of a float64 .npy ..."): no silent
// conversion.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "engine/array.hpp"

namespace gs::nn {

std::string npy_bytes(const Array& array);
std::string npy_bytes(const IndexArray& array);
Array parse_npy_real(std::string_view bytes, const std::string& file, const Shape& expected);
IndexArray parse_npy_i8(std::string_view bytes, const std::string& file, const Shape& expected);
Array read_npy_real(const std::filesystem::path& path, const Shape& expected);
IndexArray read_npy_i8(const std::filesystem::path& path, const Shape& expected);

}  // namespace gs::nn
