#include "engine/error.hpp"

namespace gs {

std::string site_str(const Site& site) {
  std::string_view file = site.file_name();
  if (auto slash = file.find_last_of('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return std::string(file) + ":" + std::to_string(site.line());
}

void fail(std::string_view op, const Site& site, const std::string& what) {
  throw Error(std::string(op) + " at " + site_str(site) + ": " + what);
}

}  // namespace gs
