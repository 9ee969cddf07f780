#include "nn/io/checksum.hpp"

#include <openssl/evp.h>

#include <limits>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::nn {

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

std::string sha256_of_file(const std::filesystem::path& path) {
  return sha256_hex(read_file(path, std::numeric_limits<std::size_t>::max()));
}

}  // namespace gs::nn
