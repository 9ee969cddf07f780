// NumPy's .npy format for the two element types gradscope has: float64 ('<f8', Array) and int64
// ('<i8', IndexArray), little-endian, C (row-major) order. Files written here load with numpy.load, and
// numpy.save's files of those types load here.
//
// The layout (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
//   bytes 0-5   the magic "\x93NUMPY"
//   bytes 6-7   the version: 1.0 (2.0 and 3.0 only widen HEADER_LEN to 4 bytes)
//   bytes 8-9   HEADER_LEN, a little-endian uint16
//   then        the header: an ASCII Python dict literal such as
//               {'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }
//               padded with spaces and ended by '\n' so the data starts at a multiple of 64 bytes
//   then        the raw elements, product(shape) * 8 bytes
//
// Writing is xtensor's (xt::dump_npy). Reading is this file's own, because xtensor's reader does not
// check what it reads (it does not notice a truncated file). It refuses, naming the file: a bad magic, an
// unknown version, a header that is not exactly that dict (each of the three keys once, nothing else),
// another dtype, Fortran order, more than 64 dimensions, a shape whose element count or byte count
// overflows, and data that is not exactly product(shape) elements long.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "engine/array.hpp"

namespace gs::nn {

// The bytes of a .npy file holding `array`.
std::string npy_bytes(const Array& array);
std::string npy_bytes(const IndexArray& array);

// Writes npy_bytes atomically (nn/io/atomic_file.hpp); throws gs::Error naming the file.
void write_npy(const std::filesystem::path& path, const Array& array);
void write_npy(const std::filesystem::path& path, const IndexArray& array);

// Reads .npy bytes held in memory; `file` names them in error messages.
Array parse_npy_f8(std::string_view bytes, const std::string& file);
IndexArray parse_npy_i8(std::string_view bytes, const std::string& file);

// Reads a regular file (at most nn::default_read_limit bytes) and parses it as above.
Array read_npy_f8(const std::filesystem::path& path);
IndexArray read_npy_i8(const std::filesystem::path& path);

}  // namespace gs::nn
