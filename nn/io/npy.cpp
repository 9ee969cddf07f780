#include "nn/io/npy.hpp"

#include <bit>
#include <cstdint>
#include <cstring>
#include <regex>

#include <xtensor/xnpy.hpp>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::nn {

// The element bytes are copied as they are in memory, which is the file's order only here.
static_assert(std::endian::native == std::endian::little, "npy.cpp assumes a little-endian machine");

namespace {

constexpr std::string_view magic("\x93NUMPY", 6);
constexpr std::size_t max_header = std::size_t{1} << 20;  // numpy itself refuses headers over 10,000 bytes
constexpr std::size_t max_dimensions = 64;

// The dict as numpy and xtensor write it, keys in this order, once each, matched after its spaces are
// removed (numpy puts one after each ':' and ','; none is significant) and the '\n' ending the padding.
const std::regex header_dict(R"(\{(?:'descr'|"descr"):['"]([^'"]{1,8})['"],(?:'fortran_order'|"fortran_order"):(True|False),)"
                             R"((?:'shape'|"shape"):\(([\d,]*)\),?\})");
template <class T>
xt::xarray<T> parse(std::string_view bytes, const std::string& file, const std::string& want_descr) {
  if (bytes.size() < magic.size() + 2 || bytes.substr(0, magic.size()) != magic)
    throw Error(file + ": not a .npy file (bad magic)");
  const auto major = static_cast<unsigned char>(bytes[6]), minor = static_cast<unsigned char>(bytes[7]);
  // Version 1.0 has a 2-byte HEADER_LEN, versions 2.0 and 3.0 a 4-byte one.
  const std::size_t len_size = minor != 0 ? 0 : major == 1 ? 2 : major == 2 || major == 3 ? 4 : 0;
  if (len_size == 0)
    throw Error(file + ": unsupported .npy version " + std::to_string(major) + "." + std::to_string(minor));
  if (bytes.size() < magic.size() + 2 + len_size) throw Error(file + ": truncated .npy header");
  std::size_t header_len = 0;
  for (std::size_t b = 0; b < len_size; ++b)
    header_len |= std::size_t(static_cast<unsigned char>(bytes[magic.size() + 2 + b])) << (8 * b);
  if (header_len > max_header) throw Error(file + ": corrupt .npy header (HEADER_LEN " + std::to_string(header_len) + ")");
  const std::size_t data_start = magic.size() + 2 + len_size + header_len;
  if (bytes.size() < data_start) throw Error(file + ": truncated .npy header");
  std::string dict(bytes.substr(magic.size() + 2 + len_size, header_len));
  std::erase(dict, ' ');
  if (!dict.empty() && dict.back() == '\n') dict.pop_back();
  std::smatch m;
  if (dict.size() > 4096 || !std::regex_match(dict, m, header_dict))
    throw Error(file + ": corrupt .npy header (not numpy's dict {'descr': ..., 'fortran_order': ..., 'shape': (...), })");
  if (m[1] != want_descr) throw Error(file + ": dtype '" + m[1].str() + "', expected '" + want_descr + "'");
  if (m[2] == "True") throw Error(file + ": fortran_order is True, only C order (False) is read");
  // The dimensions "2,3" or "6," or "": each digits only. The element count, and the span of the
  // dimensions (zeros counted as 1, which bounds the strides xtensor computes), checked against overflow.
  Shape shape;
  std::size_t span = 1, count = 1;
  const std::string dims = m[3].str() + (m[3].length() && m[3].str().back() != ',' ? "," : "");
  for (std::size_t at = 0, comma; (comma = dims.find(',', at)) != std::string::npos; at = comma + 1) {
    const std::string digits = dims.substr(at, comma - at);
    if (digits.empty()) throw Error(file + ": corrupt .npy header (the shape is not a tuple of integers)");
    if (digits.size() > 20 || (digits.size() == 20 && digits > "18446744073709551615"))
      throw Error(file + ": corrupt .npy header (a dimension does not fit in 64 bits)");
    const std::size_t d = std::stoull(digits);
    shape.push_back(d);
    if (shape.size() > max_dimensions) throw Error(file + ": more than " + std::to_string(max_dimensions) + " dimensions");
    if (__builtin_mul_overflow(span, d == 0 ? 1 : d, &span) || span > PTRDIFF_MAX / sizeof(T))
      throw Error(file + ": shape (" + m[3].str() + ") is too large (its element count overflows)");
    count *= d;  // at most span
  }
  const std::size_t data_bytes = count * sizeof(T), data_size = bytes.size() - data_start;
  if (data_size != data_bytes)
    throw Error(file + ": shape " + shape_str(shape) + " needs " + std::to_string(data_bytes) +
                " data bytes, the file has " + std::to_string(data_size) + " (truncated or corrupt)");
  xt::xarray<T> array = xt::xarray<T>::from_shape(shape);
  if (count) std::memcpy(array.data(), bytes.data() + data_start, data_bytes);
  return array;
}

}  // namespace

std::string npy_bytes(const Array& array) { return xt::dump_npy(array); }
std::string npy_bytes(const IndexArray& array) { return xt::dump_npy(array); }
void write_npy(const std::filesystem::path& path, const Array& array) { write_file_atomically(path, npy_bytes(array)); }
void write_npy(const std::filesystem::path& path, const IndexArray& array) { write_file_atomically(path, npy_bytes(array)); }

Array parse_npy_f8(std::string_view bytes, const std::string& file) { return parse<double>(bytes, file, "<f8"); }
IndexArray parse_npy_i8(std::string_view bytes, const std::string& file) { return parse<std::int64_t>(bytes, file, "<i8"); }
Array read_npy_f8(const std::filesystem::path& path) { return parse_npy_f8(read_file(path), path.string()); }
IndexArray read_npy_i8(const std::filesystem::path& path) { return parse_npy_i8(read_file(path), path.string()); }

}  // namespace gs::nn
