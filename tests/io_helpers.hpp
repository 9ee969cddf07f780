// Helpers shared by the file tests (test_io_*): temporary directories, raw writes,
// bitwise comparison, and resealing a directory's manifest after a test has changed its files on
// purpose (so that the checks behind the checksums can be reached).
#pragma once

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "engine/array.hpp"
#include "engine/error.hpp"
#include "engine/parameter.hpp"
#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "nn/config.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/io/directory_write.hpp"
#include "nn/optim.hpp"
#include "nn/transformer_lm.hpp"

namespace gs::test {

namespace fs = std::filesystem;

// A fresh, empty directory under /tmp, removed at the end of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("gradscope-test-" + std::to_string(::getpid()) + "-" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

inline bool same_bits(const Array& a, const Array& b) {
  return shape_of(a) == shape_of(b) && std::equal(a.begin(), a.end(), b.begin(), [](double x, double y) {
           return std::memcmp(&x, &y, sizeof x) == 0;
         });
}

// Replaces a file's bytes in place (no temporary file): what a corruption does.
inline void overwrite(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

// A file's bytes, or "" if it cannot be opened (for checking what a refused write left alone).
inline std::string read_file_or_empty(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Rewrites DIR's manifest so that it lists every file now in DIR with its current SHA-256: the
// directory then looks as if gradscope had written it this way.
inline void reseal(const fs::path& dir) {
  const nn::Manifest m = nn::read_manifest(dir);
  std::vector<std::pair<std::string, std::string>> files;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().lexically_relative(dir).generic_string();
    if (e.is_regular_file() && name != nn::manifest_name) files.push_back({name, nn::sha256_hex(nn::read_file(e.path()))});
  }
  overwrite(dir / nn::manifest_name, nn::manifest_text(m.tag, &files));
}

inline nn::ModelConfig saved_config(unsigned seed = 3) {
  return {.vocab = 7, .context = 5, .d_model = 8, .heads = 2, .layers = 2, .seed = seed};
}

// A tiny model initialised with `seed` after one AdamW step, so that its parameters and moments hold
// arbitrary doubles: what the fuzz test and tests/helpers/io_helper.cpp save.
struct TinyRun {
  nn::TransformerLM model;
  nn::Adam adam;
  explicit TinyRun(unsigned seed) : model(saved_config(seed)), adam(model.named_parameters(), nn::adamw_options(0.01)) {
    Tape::current().reset();
    model.loss(IndexArray{{1, 2, 3, 4, 5}}, IndexArray{{2, 3, 4, 5, 6}}).backward();
    adam.step(1e-2);
    Tape::current().reset();
  }
};

}  // namespace gs::test
