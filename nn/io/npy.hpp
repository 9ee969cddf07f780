// NumPy's .npy format, version 1.0, for the two element types gradscope has: float64 ('<f8', Array)
// and int64 ('<i8', IndexArray), little-endian, C (row-major) order. Files written here load with
// numpy.load, and numpy.save's files of those types load here.
//
// The layout (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
//   bytes 0-5   the magic "\x93NUMPY"
//   bytes 6-7   the version, 1 and 0
//   bytes 8-9   HEADER_LEN, a little-endian uint16
//   then        the header: an ASCII Python dict literal such as
//               {'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }
//               padded with spaces and ended by '\n' so the data starts at a multiple of 64 bytes
//   then        the raw elements, product(shape) * 8 bytes
#pragma once

#include <filesystem>
#include <string>

#include "engine/array.hpp"

namespace gs::nn {

// Writes atomically (a temporary file, then a rename); throws gs::Error naming the file.
void write_npy(const std::filesystem::path& path, const Array& array);
void write_npy(const std::filesystem::path& path, const IndexArray& array);

// The same bytes write_npy writes, for callers that assemble files themselves.
std::string npy_bytes(const Array& array);
std::string npy_bytes(const IndexArray& array);

// Reads a file written by write_npy or numpy.save. Checks the magic, the version (1.0; 2.0 and 3.0
// only widen HEADER_LEN and are accepted too), the dtype, C order, and that the data is exactly
// product(shape) elements long. Any failure throws gs::Error naming the file and what is wrong.
Array read_npy_f8(const std::filesystem::path& path);
IndexArray read_npy_i8(const std::filesystem::path& path);

}  // namespace gs::nn
