// Who wrote an output (the rules in full: docs/reliability.md, "Output directories and files"). A
// directory is ours when it holds our manifest, DIR/gradscope-output.json, naming the program and kind;
// one written as a whole (a checkpoint, a dump) lists its files with their SHA-256 and is replaced only
// when empty or this program's output of this kind holding nothing unlisted. A single file (--graph,
// --html) is replaced only when its first 4 KiB carry "written by gradscope PROGRAM", or with --overwrite.
// Only the output itself is looked at, never its ancestors; a refusal is one line naming flag and path.
//
// write_directory_atomically fills "<dir>.tmp-<pid>" (then the manifest), flushes it with one syncfs
// (an fsync per file costs milliseconds each), renames an existing dir aside to "<dir>.old-<pid>", the
// new one in, flushes the parent and removes the old one: a run killed at any moment leaves dir as it
// was, or complete, or (between the renames) its previous version whole under the .old name.
// VerifiedDirectory reads a file back only if the manifest lists it with the SHA-256 it has.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gs::nn {

struct OutputTag {
  std::string program, kind;  // "train", "checkpoint" (or "dump", or "out": filled file by file, lists no files)
};

inline constexpr const char* manifest_name = "gradscope-output.json";

struct Manifest {
  OutputTag tag;
  std::map<std::string, std::string> files;  // relative '/'-separated path -> SHA-256 (hex)
};

Manifest read_manifest(const std::filesystem::path& dir);  // gs::Error naming it if missing or malformed
std::string manifest_text(const OutputTag& tag, const std::vector<std::pair<std::string, std::string>>* files);

std::string this_program();                              // the running executable's name
std::string output_signature(std::string_view program);  // "written by gradscope PROGRAM"
std::string describe(const OutputTag& tag);              // "gradscope train's checkpoint"

// --graph FILE, --html FILE: refuses (gs::Error "FLAG FILE: ...") anything but an absent file, this
// program's own earlier file, or with `overwrite` any regular file; checks that it can be created.
void check_output_file(const std::filesystem::path& file, std::string_view flag, std::string_view program,
                       bool overwrite = false);
// "" if the existing directory `dir` may be replaced as a whole by `tag`'s output, else why not.
std::string why_not_replaceable(const std::filesystem::path& dir, const OutputTag& tag);
// Refuses a path that could not be created (tried by creating and removing "<path>.tmp-<pid>").
void check_creatable(const std::filesystem::path& path, std::string_view flag);
[[noreturn]] void refuse_path(std::string_view flag, const std::filesystem::path& path, const std::string& what);

class DirectoryWriter {
 public:
  void write(const std::string& relative, std::string_view bytes);  // '/'-separated, inside the directory
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
  VerifiedDirectory(std::filesystem::path dir, const std::string& kind);  // gradscope's manifest of `kind`
  const std::filesystem::path& dir() const { return dir_; }
  const Manifest& manifest() const { return manifest_; }
  std::string read(const std::string& relative, std::size_t max_bytes) const;  // errors name the file
  void refuse_unlisted_files() const;  // throws naming the first file under dir that is not listed

 private:
  std::filesystem::path dir_;
  Manifest manifest_;
};

}  // namespace gs::nn
