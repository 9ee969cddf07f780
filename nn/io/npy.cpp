#include "nn/io/npy.hpp"

#include <bit>
#include <cstring>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::nn {

// The element bytes are copied as they are in memory, which is the file's order only here.
static_assert(std::endian::native == std::endian::little, "npy.cpp assumes a little-endian machine");

namespace {

constexpr char magic[] = "\x93NUMPY";  // 6 bytes (plus the literal's terminating 0)
constexpr std::size_t magic_size = 6;

std::string shape_tuple(const Shape& shape) {
  // Python's tuple syntax: "()", "(4,)", "(2, 3)".
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

template <class T>
std::string bytes_of(const xt::xarray<T>& array, const char* descr) {
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " +
                       shape_tuple(shape_of(array)) + ", }";
  // Pad with spaces so that magic + version + HEADER_LEN + header + '\n' is a multiple of 64.
  const std::size_t prefix = magic_size + 2 + 2;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';

  std::string out(magic, magic_size);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  // xarray is row-major and contiguous, so its storage is the C-order data.
  const T* data = array.data();
  out.append(reinterpret_cast<const char*>(data), array.size() * sizeof(T));
  return out;
}

// The value of `key` in the header dict, as the raw text up to the next top-level ',' or '}'.
std::string header_value(const std::string& header, const std::string& key, const std::string& file) {
  const std::size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) throw Error(file + ": corrupt .npy header: no '" + key + "' in " + header);
  std::size_t colon = header.find(':', k);
  if (colon == std::string::npos) throw Error(file + ": corrupt .npy header: " + header);
  std::size_t begin = colon + 1;
  while (begin < header.size() && header[begin] == ' ') ++begin;
  std::size_t end = begin;
  int depth = 0;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  std::string value = header.substr(begin, end - begin);
  while (!value.empty() && value.back() == ' ') value.pop_back();
  return value;
}

Shape parse_shape(const std::string& text, const std::string& file) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    throw Error(file + ": corrupt .npy header: shape " + text + " is not a tuple");
  Shape shape;
  std::size_t i = 1;
  while (i + 1 < text.size()) {
    while (i + 1 < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i + 1 >= text.size()) break;
    std::size_t j = i;
    while (j + 1 < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
    if (j == i) throw Error(file + ": corrupt .npy header: shape " + text + " is not a tuple of integers");
    shape.push_back(std::stoull(text.substr(i, j - i)));
    i = j;
  }
  return shape;
}

template <class T>
xt::xarray<T> read(const std::filesystem::path& path, const std::string& want_descr) {
  const std::string file = path.string();
  const std::string bytes = read_file(path);
  if (bytes.size() < magic_size + 4 || bytes.compare(0, magic_size, magic, magic_size) != 0)
    throw Error(file + ": not a .npy file (bad magic)");
  const auto major = static_cast<unsigned char>(bytes[6]);
  // Version 1.0 has a 2-byte HEADER_LEN, versions 2.0 and 3.0 a 4-byte one.
  std::size_t len_size = major == 1 ? 2 : major == 2 || major == 3 ? 4 : 0;
  if (len_size == 0) throw Error(file + ": unsupported .npy version " + std::to_string(major));
  if (bytes.size() < magic_size + 2 + len_size) throw Error(file + ": truncated .npy header");
  std::size_t header_len = 0;
  for (std::size_t b = 0; b < len_size; ++b)
    header_len |= std::size_t(static_cast<unsigned char>(bytes[magic_size + 2 + b])) << (8 * b);
  const std::size_t data_start = magic_size + 2 + len_size + header_len;
  if (bytes.size() < data_start) throw Error(file + ": truncated .npy header");
  const std::string header = bytes.substr(magic_size + 2 + len_size, header_len);

  const std::string descr = header_value(header, "descr", file);
  if (descr != "'" + want_descr + "'")
    throw Error(file + ": dtype " + descr + ", expected '" + want_descr + "'");
  const std::string order = header_value(header, "fortran_order", file);
  if (order != "False") throw Error(file + ": fortran_order is " + order + ", only C order (False) is read");
  const Shape shape = parse_shape(header_value(header, "shape", file), file);

  std::size_t count = 1;
  for (std::size_t d : shape) count *= d;
  const std::size_t data_size = bytes.size() - data_start;
  if (data_size != count * sizeof(T))
    throw Error(file + ": shape " + shape_str(shape) + " needs " + std::to_string(count * sizeof(T)) +
                " data bytes, the file has " + std::to_string(data_size) + " (truncated or corrupt)");
  xt::xarray<T> array = xt::xarray<T>::from_shape(shape);
  if (count) std::memcpy(array.data(), bytes.data() + data_start, count * sizeof(T));
  return array;
}

}  // namespace

std::string npy_bytes(const Array& array) { return bytes_of(array, "<f8"); }
std::string npy_bytes(const IndexArray& array) { return bytes_of(array, "<i8"); }

void write_npy(const std::filesystem::path& path, const Array& array) { write_file_atomically(path, npy_bytes(array)); }
void write_npy(const std::filesystem::path& path, const IndexArray& array) {
  write_file_atomically(path, npy_bytes(array));
}

Array read_npy_f8(const std::filesystem::path& path) { return read<double>(path, "<f8"); }
IndexArray read_npy_i8(const std::filesystem::path& path) { return read<std::int64_t>(path, "<i8"); }

}  // namespace gs::nn
