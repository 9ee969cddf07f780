// Who wrote an output, and directories written as a whole. gradscope never deletes or overwrites what
// it did not write:
//   - A directory is ours when it holds our manifest, DIR/gradscope-output.json:
//       {"written_by": "gradscope", "program": "train", "kind": "checkpoint", "files": {"config.json": "<sha256>", ...}}
//     A directory written as a whole (a checkpoint, a dump) lists its files and is replaced only when it
//     is empty, or this program's output of this kind holding nothing but the files listed. A directory
//     filled file by file (--out, experiments/lib/outputs.hpp) lists none.
//   - A single file (--graph, --html) is created new, or replaced only when its first 4 KiB carry our
//     marker "written by gradscope PROGRAM" (a comment in DOT, SVG and HTML), or with --overwrite.
//   - Nothing is written through a symbolic link, a FIFO or a device; every refusal is one line naming
//     the flag and the path, before any work. Only the output itself is looked at, never its ancestors.
//   - "<target>.tmp-<pid>" beside a target is where a write of it happens; a killed run leaves it for
//     the user to remove.
//
// write_directory_atomically(dir, tag, fill) refuses a dir that `tag` may not replace, writes
// "<dir>.tmp-<pid>" (fill's files, then the manifest listing them with their SHA-256), flushes it to the
// disk (one syncfs rather than an fsync per file), renames an existing dir aside to "<dir>.old-<pid>",
// renames the new one in, flushes the parent and removes the old one. If fill throws, dir is untouched.
// A run killed between the two renames leaves no dir and its previous version whole under the .old name.
//
// VerifiedDirectory reads one back: its manifest must be gradscope's, of the expected kind; a file read
// through it must be listed and have the listed SHA-256 (a byte changed after the write is refused,
// even where the value it makes is a plausible number).
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
  std::string program;  // "train", "gradflow"
  std::string kind;     // "checkpoint", "dump", "out"
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
  VerifiedDirectory(std::filesystem::path dir, const std::string& kind);

  const std::filesystem::path& dir() const { return dir_; }
  const Manifest& manifest() const { return manifest_; }
  // The file's bytes, if listed, regular, at most max_bytes and of the listed SHA-256. Errors name it.
  std::string read(const std::string& relative, std::size_t max_bytes) const;
  void refuse_unlisted_files() const;  // throws naming the first file under dir that is not listed

 private:
  std::filesystem::path dir_;
  Manifest manifest_;
};

}  // namespace gs::nn
