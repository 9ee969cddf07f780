#include "nn/io/npy.hpp"

#include <cstdint>
#include <sstream>

#include <xtensor/xnpy.hpp>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::nn {

namespace {

template <class T>
xt::xarray<T> parse(std::string_view bytes, const std::string& file, const Shape& expected, const char* dtype) {
  // The size first, before anything is allocated: the file holds the data, product(shape) elements.
  std::size_t data = sizeof(T);
  for (std::size_t d : expected)
    if (__builtin_mul_overflow(data, d, &data)) throw Error(file + ": the shape " + shape_str(expected) + " is too large");
  const std::string what = std::string(" a ") + dtype + " .npy of shape " + shape_str(expected);
  if (bytes.size() < data)
    throw Error(file + ": " + std::to_string(bytes.size()) + " bytes, fewer than the data of" + what + " (truncated or corrupt)");
  const std::string ours = xt::dump_npy(xt::xarray<T>::from_shape(expected));  // xt::dump_npy's header, then the data
  const std::size_t header = ours.size() - data;
  if (bytes.size() != ours.size())
    throw Error(file + ": " + std::to_string(bytes.size()) + " bytes, not the " + std::to_string(ours.size()) + " of" + what +
                " (truncated or corrupt)");
  if (bytes.compare(0, header, ours.substr(0, header)) != 0)
    throw Error(file + ": its header is not that of" + what + " (another shape or dtype, or corrupt)");
  std::istringstream in{std::string(bytes)};
  return xt::load_npy<T>(in);
}

}  // namespace

std::string npy_bytes(const Array& array) { return xt::dump_npy(array); }
std::string npy_bytes(const IndexArray& array) { return xt::dump_npy(array); }

Array parse_npy_real(std::string_view bytes, const std::string& file, const Shape& shape) {
  return parse<Real>(bytes, file, shape, float32_build ? "float32" : "float64");
}
IndexArray parse_npy_i8(std::string_view bytes, const std::string& file, const Shape& shape) {
  return parse<std::int64_t>(bytes, file, shape, "int64");
}
Array read_npy_real(const std::filesystem::path& path, const Shape& shape) { return parse_npy_real(read_file(path), path.string(), shape); }
IndexArray read_npy_i8(const std::filesystem::path& path, const Shape& shape) { return parse_npy_i8(read_file(path), path.string(), shape); }

}  // namespace gs::nn
