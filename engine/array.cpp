#include "engine/array.hpp"

#include <cstdio>

namespace gs {

std::string shape_str(const Shape& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

std::string to_string(const Array& x, std::size_t max_elements) {
  const Shape shape = shape_of(x);
  if (x.size() > max_elements) {
    std::string s = "array of shape " + shape_str(shape) + ", first values:";
    char buf[32];
    for (std::size_t i = 0; i < max_elements; ++i) {
      std::snprintf(buf, sizeof buf, " %g", x.data()[i]);
      s += buf;
    }
    return s + " ...";
  }
  if (shape.empty()) return std::to_string(x());
  // Walk the elements in row-major order, opening a brace where an index rolls over to 0 and closing
  // one where it reaches its end.
  std::string s;
  std::vector<std::size_t> index(shape.size(), 0);
  const std::size_t rank = shape.size();
  for (std::size_t flat = 0; flat < x.size() || flat == 0; ++flat) {
    std::size_t opening = 0;  // how many axes start a new row here
    while (opening < rank && index[rank - 1 - opening] == 0) ++opening;
    if (flat > 0) s += opening > 0 ? ",\n" + std::string(rank - opening, ' ') : ", ";
    s += std::string(opening, '{');
    if (x.size() == 0) break;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x.data()[flat]);
    s += buf;
    std::size_t closing = 0;  // advance the index and count the rows that end here
    for (std::size_t d = rank; d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
      ++closing;
    }
    s += std::string(closing, '}');
  }
  if (x.size() == 0) s += std::string(rank, '}');
  return s;
}

}  // namespace gs
