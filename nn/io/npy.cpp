#include "nn/io/npy.hpp"

#include <bit>
#include <cstdint>
#include <cstring>
#include <algorithm>

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

struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// A parser of exactly that Python dict: string keys, values a string, True or False, or a tuple of integers.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  Header parse() {
    Header h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    expect('{');
    while (skip_space(), !eat('}')) {
      const std::string key = quoted();
      expect(':');
      skip_space();
      if (key == "descr" && !seen_descr) {
        h.descr = quoted();
        seen_descr = true;
      } else if (key == "fortran_order" && !seen_order) {
        if (word("True")) h.fortran_order = true;
        else if (!word("False")) fail("fortran_order is neither True nor False");
        seen_order = true;
      } else if (key == "shape" && !seen_shape) {
        h.shape = tuple();
        seen_shape = true;
      } else {
        fail("unexpected key '" + key + "' (or a key given twice)");
      }
      skip_space();
      if (!eat(',')) {
        expect('}');
        break;
      }
    }
    if (!seen_descr || !seen_order || !seen_shape) fail("it lacks one of 'descr', 'fortran_order', 'shape'");
    for (; pos_ < text_.size(); ++pos_)
      if (text_[pos_] != ' ' && text_[pos_] != '\n') fail("characters after the dict");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(file_ + ": corrupt .npy header (" + what + ") at byte " + std::to_string(pos_) + " of the header");
  }
  void skip_space() { pos_ = std::min(text_.find_first_not_of(' ', pos_), text_.size()); }
  bool eat(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) return ++pos_, true;
    return false;
  }
  void expect(char c) {
    skip_space();
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool word(std::string_view w) { return text_.substr(pos_, w.size()) == w ? (pos_ += w.size(), true) : false; }
  std::string quoted() {
    skip_space();
    const char q = pos_ < text_.size() ? text_[pos_] : '\0';
    if (q != '\'' && q != '"') fail("expected a quoted string");
    const std::size_t end = text_.find(q, pos_ + 1);
    if (end == std::string_view::npos || end - pos_ > 64) fail("unterminated string");
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return s;
  }
  // "()", "(4,)", "(2, 3)"
  Shape tuple() {
    if (!eat('(')) fail("the shape is not a tuple");
    Shape shape;
    while (skip_space(), !eat(')')) {
      if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') fail("the shape is not a tuple of integers");
      std::size_t d = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        if (__builtin_mul_overflow(d, 10, &d) || __builtin_add_overflow(d, std::size_t(text_[pos_] - '0'), &d))
          fail("a dimension does not fit in 64 bits");
        ++pos_;
      }
      shape.push_back(d);
      if (shape.size() > max_dimensions) fail("more than " + std::to_string(max_dimensions) + " dimensions");
      skip_space();
      if (!eat(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }

  std::string_view text_;
  const std::string& file_;
  std::size_t pos_ = 0;
};

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
  const Header h = HeaderParser(bytes.substr(magic.size() + 2 + len_size, header_len), file).parse();

  if (h.descr != want_descr) throw Error(file + ": dtype '" + h.descr + "', expected '" + want_descr + "'");
  if (h.fortran_order) throw Error(file + ": fortran_order is True, only C order (False) is read");
  // The element count, and the span of the dimensions (zeros counted as 1, which bounds the strides
  // xtensor computes from the shape), each checked against overflow.
  std::size_t span = 1, count = 1;
  for (std::size_t d : h.shape) {
    if (__builtin_mul_overflow(span, d == 0 ? 1 : d, &span) || span > PTRDIFF_MAX / sizeof(T))
      throw Error(file + ": shape " + shape_str(h.shape) + " is too large (its element count overflows)");
    count *= d;  // at most span
  }
  const std::size_t data_bytes = count * sizeof(T);
  const std::size_t data_size = bytes.size() - data_start;
  if (data_size != data_bytes)
    throw Error(file + ": shape " + shape_str(h.shape) + " needs " + std::to_string(data_bytes) +
                " data bytes, the file has " + std::to_string(data_size) + " (truncated or corrupt)");
  xt::xarray<T> array = xt::xarray<T>::from_shape(h.shape);
  if (count) std::memcpy(array.data(), bytes.data() + data_start, data_bytes);
  return array;
}

}  // namespace

std::string npy_bytes(const Array& array) { return xt::dump_npy(array); }
std::string npy_bytes(const IndexArray& array) { return xt::dump_npy(array); }

void write_npy(const std::filesystem::path& path, const Array& array) { write_file_atomically(path, npy_bytes(array)); }
void write_npy(const std::filesystem::path& path, const IndexArray& array) {
  write_file_atomically(path, npy_bytes(array));
}

Array parse_npy_f8(std::string_view bytes, const std::string& file) { return parse<double>(bytes, file, "<f8"); }
IndexArray parse_npy_i8(std::string_view bytes, const std::string& file) {
  return parse<std::int64_t>(bytes, file, "<i8");
}

Array read_npy_f8(const std::filesystem::path& path) { return parse_npy_f8(read_file(path), path.string()); }
IndexArray read_npy_i8(const std::filesystem::path& path) { return parse_npy_i8(read_file(path), path.string()); }

}  // namespace gs::nn
