#include "nn/io/atomic_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/error.hpp"

namespace gs::nn {

void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  std::filesystem::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot write " + tmp.string() + ": " + std::strerror(errno));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      throw Error("cannot write " + tmp.string() + ": write failed (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw Error("cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message());
  }
}

void write_directory_atomically(const std::filesystem::path& dir,
                                const std::function<void(const std::filesystem::path&)>& fill) {
  namespace fs = std::filesystem;
  fs::path target = dir.lexically_normal();
  if (!target.has_filename()) target = target.parent_path();  // "out/" -> "out"
  const std::string pid = std::to_string(::getpid());
  fs::path tmp = target, old = target;
  tmp += ".tmp-" + pid;
  old += ".old-" + pid;
  fs::remove_all(tmp);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  fs::create_directory(tmp);
  try {
    fill(tmp);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    throw;
  }
  std::error_code ec;
  const bool existed = fs::exists(target);
  if (existed) fs::rename(target, old, ec);
  if (!ec) fs::rename(tmp, target, ec);
  if (ec) throw Error("cannot move " + tmp.string() + " to " + target.string() + ": " + ec.message());
  if (existed) fs::remove_all(old, ec);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + path.string() + ": " + std::strerror(errno));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace gs::nn
