// NumPy's .npy format, float64 ('<f8', Array) and int64 ('<i8', IndexArray), written and read by
// xtensor (xt::dump_npy, xt::load_npy: format 1.0, little-endian, C order).
//
// xtensor's reader trusts the file: it allocates what the header asks for and does not notice a
// truncated file. So a reader names the shape it expects (the shape config.json lists, the model's):
// the file must be exactly the bytes xt::dump_npy writes for an array of that shape, its header
// identical and its data product(shape) elements long, before xt::load_npy reads it. Anything else is
// one gs::Error naming the file.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "engine/array.hpp"

namespace gs::nn {

std::string npy_bytes(const Array& array);
std::string npy_bytes(const IndexArray& array);
void write_npy(const std::filesystem::path& path, const Array& array);  // atomically
void write_npy(const std::filesystem::path& path, const IndexArray& array);

// `file` names the bytes in error messages.
Array parse_npy_f8(std::string_view bytes, const std::string& file, const Shape& expected);
IndexArray parse_npy_i8(std::string_view bytes, const std::string& file, const Shape& expected);
Array read_npy_f8(const std::filesystem::path& path, const Shape& expected);
IndexArray read_npy_i8(const std::filesystem::path& path, const Shape& expected);

}  // namespace gs::nn
