// NumPy's .npy format for float64 ('<f8', Array) and int64 ('<i8', IndexArray), little-endian, C order:
// the magic "\x93NUMPY", a version (1.0; 2.0 and 3.0 widen HEADER_LEN to 4 bytes), a little-endian
// HEADER_LEN, the header dict {'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), } padded with
// spaces and '\n' to a multiple of 64 bytes, then product(shape) raw elements.
//
// Writing is xtensor's (xt::dump_npy). Reading checks what xtensor's xt::load_npy does not (a truncated
// file, a dimension that is not a number, a shape that asks for any amount of memory): refused, naming
// the file, are a bad magic or version, a header that is not that dict (one regex, numpy's spacing
// tolerated), another dtype, Fortran order, more than 64 dimensions, an element count that overflows,
// and data that is not exactly product(shape) elements long.
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
Array parse_npy_f8(std::string_view bytes, const std::string& file);
IndexArray parse_npy_i8(std::string_view bytes, const std::string& file);
Array read_npy_f8(const std::filesystem::path& path);  // a regular file of at most default_read_limit bytes
IndexArray read_npy_i8(const std::filesystem::path& path);

}  // namespace gs::nn
