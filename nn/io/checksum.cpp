#include "nn/io/checksum.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/error.hpp"

namespace gs::nn {

namespace {

// One SHA-256 computation, fed piece by piece (OpenSSL's EVP interface).
class Sha256 {
 public:
  Sha256() : context_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!context_ || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1)
      throw Error("sha256: OpenSSL could not start a digest");
  }
  void add(const void* data, std::size_t size) {
    if (EVP_DigestUpdate(context_.get(), data, size) != 1) throw Error("sha256: OpenSSL digest update failed");
  }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    if (EVP_DigestFinal_ex(context_.get(), digest, &size) != 1) throw Error("sha256: OpenSSL digest failed");
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < size; ++i) {
      out += digits[digest[i] >> 4];
      out += digits[digest[i] & 15];
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> context_;
};

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  Sha256 sha;
  sha.add(bytes.data(), bytes.size());
  return sha.hex();
}

std::string sha256_of_file(const std::filesystem::path& path) {
  const std::string file = path.string();
  Sha256 sha;
  // O_NONBLOCK: opening a FIFO does not wait for a writer; the check below then refuses it.
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open " + file + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(file + ": not a regular file");
  }
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      throw Error("cannot read " + file + ": " + std::strerror(e));
    }
    if (n == 0) break;
    sha.add(buffer.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return sha.hex();
}

}  // namespace gs::nn
