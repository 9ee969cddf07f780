// Errors: every misuse throws gs::Error whose message names the op, the shapes involved and the
// user's call site, e.g.  "add at model.cpp:42: cannot broadcast (2, 3) with (4,)".
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gs {

// Where an op was called from. Every op takes one as a defaulted last argument, so that the compiler
// fills in the user's file and line.
using Site = std::source_location;

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "model.cpp:42" (the file's base name and the line).
std::string site_str(const Site& site);

// Throws gs::Error("<op> at <site>: <what>").
[[noreturn]] void fail(std::string_view op, const Site& site, const std::string& what);

}  // namespace gs
