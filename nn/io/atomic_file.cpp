#include "nn/io/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "engine/error.hpp"

namespace gs::nn {

namespace fs = std::filesystem;

namespace {

std::string mib(std::uintmax_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// Up to `limit` bytes of a regular file, and whether it holds more. Anything else is refused before it
// is opened (opening a FIFO would wait for a writer); `whole`: so is a file larger than the limit.
std::pair<std::string, bool> read_regular(const fs::path& path, std::size_t limit, bool whole) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec) throw Error("cannot open " + path.string() + ": " + ec.message());
  if (!fs::is_regular_file(st))
    throw Error(path.string() + ": not a regular file (" +
                (fs::is_directory(st) ? "a directory" : fs::is_fifo(st) ? "a FIFO" : fs::is_socket(st) ? "a socket" : "a device") + ")");
  if (const std::uintmax_t size = fs::file_size(path, ec); whole && !ec && size > limit)
    throw Error(path.string() + ": " + mib(size) + " is more than the limit of " + mib(limit) + " for this file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + path.string() + ": " + std::strerror(errno));
  std::string out;
  char buffer[1 << 16];
  while (out.size() < limit && in.read(buffer, std::min(sizeof buffer, limit - out.size())).gcount() > 0)
    out.append(buffer, static_cast<std::size_t>(in.gcount()));
  if (in.bad()) throw Error("cannot read " + path.string());
  return {std::move(out), in.peek() != std::char_traits<char>::eof()};
}

}  // namespace

std::string read_file(const fs::path& path, std::size_t max_bytes) {
  auto [bytes, more] = read_regular(path, max_bytes, true);
  if (more) throw Error(path.string() + ": more than the limit of " + mib(max_bytes) + " for this file");  // it grew
  return std::move(bytes);
}

std::string read_file_head(const fs::path& path, std::size_t max_bytes) { return read_regular(path, max_bytes, false).first; }


fs::path temporary_name(const fs::path& path) { return path.string() + ".tmp-" + std::to_string(::getpid()); }

void write_file_atomically(const fs::path& path, std::string_view contents) {
  const fs::path tmp = temporary_name(path);
  // O_NOFOLLOW: a symbolic link planted at the temporary name is not followed.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  for (std::size_t done = 0; ok && done < contents.size();) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    ok = n >= 0 || errno == EINTR;
    done += n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  ok = ok && ::fsync(fd) == 0;
  const int err = errno;
  if (fd >= 0) ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(ok ? errno : err);
    ::unlink(tmp.c_str());
    throw Error("cannot write " + path.string() + " (through " + tmp.filename().string() + "): " + why);
  }
  fsync_directory(path.has_parent_path() ? path.parent_path() : fs::path("."));
}

void fsync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const bool synced = fd >= 0 && ::fsync(fd) == 0;
  const int err = errno;
  if (fd >= 0) ::close(fd);
  if (!synced) throw Error("cannot sync directory " + dir.string() + ": " + std::strerror(err));
}

}  // namespace gs::nn
