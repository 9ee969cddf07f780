// Directories written as a whole (checkpoints, dumps), and read back with every file verified.
//
// write_directory_atomically(dir, tag, fill) refuses a dir that `tag` may not replace (nn/io/ownership.hpp),
// writes "<dir>.tmp-<pid>" (fill's files, then the manifest listing them with their SHA-256), flushes it
// to the disk (one syncfs), renames an existing dir aside to "<dir>.old-<pid>", renames the new one in,
// flushes the parent and removes the old one. If fill throws, dir is untouched. A run killed at any
// moment leaves dir as it was, or complete, or (killed between the two renames) absent, with its
// previous version whole under the .old name; leftovers stay for the user to remove.
//
// VerifiedDirectory reads one back: its manifest must be gradscope's, of the expected kind, and list its
// files; every file read through it must be listed and have the listed SHA-256 (a byte changed after
// the write is refused, even where the value it makes is a plausible number).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nn/io/ownership.hpp"

namespace gs::nn {

class DirectoryWriter {
 public:
  // One file, `relative` ('/'-separated, each name once, never leaving the directory).
  void write(const std::string& relative, std::string_view bytes);

 private:
  friend void write_directory_atomically(const std::filesystem::path&, const OutputTag&,
                                         const std::function<void(DirectoryWriter&)>&);
  explicit DirectoryWriter(std::filesystem::path root) : root_(std::move(root)) {}
  std::filesystem::path root_;
  std::vector<std::pair<std::string, std::string>> files_;  // name, SHA-256, in the order written
};

void write_directory_atomically(const std::filesystem::path& dir, const OutputTag& tag,
                                const std::function<void(DirectoryWriter&)>& fill);

class VerifiedDirectory {
 public:
  VerifiedDirectory(std::filesystem::path dir, const std::string& kind);  // throws unless as said above

  const std::filesystem::path& dir() const { return dir_; }
  const Manifest& manifest() const { return manifest_; }
  bool lists(const std::string& relative) const { return manifest_.files.count(relative) > 0; }
  // The file's bytes, if listed, regular, at most max_bytes and of the listed SHA-256. Errors name it.
  std::string read(const std::string& relative, std::size_t max_bytes) const;
  void refuse_unlisted_files() const;  // throws naming the first file under dir that is not listed

 private:
  std::filesystem::path dir_;
  Manifest manifest_;
};

}  // namespace gs::nn
