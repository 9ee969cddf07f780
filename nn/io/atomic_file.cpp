#include "nn/io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "engine/error.hpp"

namespace gs::nn {

namespace fs = std::filesystem;

namespace {

std::string mib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// O_NONBLOCK: opening a FIFO does not wait for a writer.
Fd open_regular(const fs::path& path, struct stat& st) {
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) throw Error("cannot open " + path.string() + ": " + std::strerror(errno));
  if (::fstat(f.fd, &st) != 0) throw Error("cannot stat " + path.string() + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw Error(path.string() + ": not a regular file (" +
                (S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : "a device") + ")");
  return f;
}

// Reads up to `limit` bytes; returns fewer only at the end of the file.
std::string read_up_to(int fd, const fs::path& path, std::size_t limit) {
  std::string out;
  char buffer[1 << 16];
  while (out.size() < limit) {
    const ssize_t n = ::read(fd, buffer, std::min(sizeof buffer, limit - out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot read " + path.string() + ": " + std::strerror(errno));
    if (n == 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

void write_all(int fd, std::string_view contents, const fs::path& path) {
  std::size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot write " + path.string() + ": " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

fs::path directory_of(const fs::path& path) {
  return path.has_parent_path() ? path.parent_path() : fs::path(".");
}

}  // namespace

std::string read_file(const fs::path& path, std::size_t max_bytes) {
  struct stat st {};
  const Fd f = open_regular(path, st);
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes)
    throw Error(path.string() + ": " + mib(static_cast<std::size_t>(st.st_size)) + " is more than the limit of " +
                mib(max_bytes) + " for this file");
  std::string bytes = read_up_to(f.fd, path, max_bytes);
  if (bytes.size() == max_bytes && !read_up_to(f.fd, path, 1).empty())  // it grew while being read
    throw Error(path.string() + ": more than the limit of " + mib(max_bytes) + " for this file");
  return bytes;
}

std::string read_file_head(const fs::path& path, std::size_t max_bytes) {
  struct stat st {};
  const Fd f = open_regular(path, st);
  return read_up_to(f.fd, path, max_bytes);
}

fs::path temporary_name(const fs::path& path) {
  fs::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid());
  return tmp;
}

void create_file(const fs::path& path, std::string_view contents) {
  Fd f{::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)};
  if (f.fd < 0) throw Error("cannot create " + path.string() + ": " + std::strerror(errno));
  write_all(f.fd, contents, path);
}

void fsync_directory(const fs::path& dir) {
  Fd f{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (f.fd < 0 || ::fsync(f.fd) != 0) throw Error("cannot sync directory " + dir.string() + ": " + std::strerror(errno));
}

void write_file_atomically(const fs::path& path, std::string_view contents) {
  const fs::path tmp = temporary_name(path);
  try {
    {
      // O_NOFOLLOW: a symbolic link planted at the temporary name is not followed.
      Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644)};
      if (f.fd < 0) throw Error("cannot write " + tmp.string() + ": " + std::strerror(errno));
      write_all(f.fd, contents, tmp);
      if (::fsync(f.fd) != 0) throw Error("cannot write " + tmp.string() + ": " + std::strerror(errno));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw Error("cannot rename " + tmp.string() + " to " + path.string() + ": " + std::strerror(errno));
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  fsync_directory(directory_of(path));
}

}  // namespace gs::nn
