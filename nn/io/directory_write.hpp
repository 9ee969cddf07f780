// Directories written as a whole (checkpoints, dumps), and read back with every file verified.
//
// write_directory_atomically(dir, tag, fill):
//   1. refuses, before writing anything, a dir that is not replaceable by `tag`'s output (the rules of
//      nn/io/ownership.hpp: absent, empty, or tag's own earlier output holding only what its manifest
//      lists), and removes leftovers of earlier interrupted writes of it;
//   2. creates "<dir>.tmp-<pid>" holding a manifest that names `tag` (so that a leftover is provably
//      ours), lets fill() write the files through a DirectoryWriter, which records each one's SHA-256,
//      then completes the manifest with that list and flushes everything to the disk (syncfs);
//   3. swaps it with dir in one atomic step (renameat2 RENAME_EXCHANGE), flushes the parent directory,
//      and removes the previous version. Where the file system cannot exchange, dir is renamed to
//      "<dir>.old-<pid>" and the new one into place: a run killed between those two renames leaves the
//      previous version under the .old name, which the next run moves back (nn/io/ownership.hpp).
// A run killed at any moment leaves dir as it was or complete, never half written. If fill throws, the
// temporary directory is removed and dir is untouched.
//
// VerifiedDirectory reads such a directory back: its manifest must be gradscope's, of the expected
// kind, and complete; every file read through it must be listed and have the listed SHA-256.
//
// Test-only pause points: with GRADSCOPE_TEST_PAUSE_AT set to one of these names, the writing process
// stops itself (SIGSTOP) there, so that a test can kill it at that moment (tests/test_io_interrupt.cpp):
//   directory.filling   the temporary directory holds the manifest and the first file
//   directory.swapping  everything is written and synced, just before the swap
//   directory.cleaning  after the swap, before the previous version is removed
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nn/io/ownership.hpp"

namespace gs::nn {

class DirectoryWriter {
 public:
  // Writes one file, `relative` ('/'-separated, subdirectories created as needed), and records its
  // SHA-256 for the manifest. Each name once; ".." and absolute names are refused.
  void write(const std::string& relative, std::string_view bytes);
  const std::filesystem::path& root() const { return root_; }  // the temporary directory

 private:
  friend void write_directory_atomically(const std::filesystem::path&, const OutputTag&,
                                         const std::function<void(DirectoryWriter&)>&);
  DirectoryWriter(std::filesystem::path root, OutputTag tag);
  void finish();  // writes the complete manifest

  std::filesystem::path root_;
  OutputTag tag_;
  std::vector<std::pair<std::string, std::string>> files_;  // name, SHA-256, in the order written
  std::set<std::string> names_;
};

void write_directory_atomically(const std::filesystem::path& dir, const OutputTag& tag,
                                const std::function<void(DirectoryWriter&)>& fill);

class VerifiedDirectory {
 public:
  // Reads DIR's manifest; throws gs::Error naming DIR unless it is gradscope's, of `kind`, complete.
  VerifiedDirectory(std::filesystem::path dir, const std::string& kind);

  const std::filesystem::path& dir() const { return dir_; }
  const Manifest& manifest() const { return manifest_; }
  bool lists(const std::string& relative) const { return manifest_.files.count(relative) > 0; }

  // The file's bytes, refused unless the manifest lists it, it is a regular file of at most max_bytes,
  // and its SHA-256 is the listed one. Errors name the file.
  std::string read(const std::string& relative, std::size_t max_bytes) const;
  // Throws gs::Error naming the first file in DIR (recursively) that the manifest does not list.
  void refuse_unlisted_files() const;

 private:
  std::filesystem::path dir_;
  Manifest manifest_;
};

}  // namespace gs::nn
