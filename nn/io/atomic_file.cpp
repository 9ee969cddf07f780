#include "nn/io/atomic_file.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

#include "engine/error.hpp"

namespace gs::nn {

namespace fs = std::filesystem;

namespace {
std::string mib(std::uintmax_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}
}  // namespace

// The kind is checked before the file is opened: opening a FIFO would wait for a writer.
std::string read_file(const fs::path& path, std::size_t max_bytes) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec) throw Error("cannot open " + path.string() + ": " + ec.message());
  if (!fs::is_regular_file(st))
    throw Error(path.string() + ": not a regular file (" +
                (fs::is_directory(st) ? "a directory" : fs::is_fifo(st) ? "a FIFO" : fs::is_socket(st) ? "a socket" : "a device") + ")");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > max_bytes)
    throw Error(path.string() + ": " + mib(size) + " is more than the limit of " + mib(max_bytes) + " for this file");
  std::ifstream in(path, std::ios::binary);
  std::string out(ec ? 0 : size, '\0');
  if (!in || !in.read(out.data(), static_cast<std::streamsize>(out.size())))
    throw Error("cannot read " + path.string() + (in ? "" : std::string(": ") + std::strerror(errno)));
  return out;
}

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

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr) != 1)
    throw Error("sha256: OpenSSL could not compute a digest");
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) out += {digits[digest[i] >> 4], digits[digest[i] & 15]};
  return out;
}

std::string sha256_of_file(const fs::path& path) { return sha256_hex(read_file(path, std::numeric_limits<std::size_t>::max())); }

}  // namespace gs::nn
