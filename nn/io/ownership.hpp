// Who wrote an output. gradscope never deletes or overwrites what it did not write:
//   - A directory is ours when it holds our manifest, DIR/gradscope-output.json:
//       {"written_by": "gradscope", "program": "train", "kind": "checkpoint", "files": {"config.json": "<sha256>", ...}}
//     A directory written as a whole (a checkpoint, a dump: nn/io/directory_write.hpp) lists its files
//     and is replaced only when it is empty, or this program's output of this kind holding nothing but
//     the files listed. A directory filled file by file (--out, experiments/lib/outputs.hpp) lists none.
//   - A single file (--graph, --html) is created new, or replaced only when its first 4 KiB carry our
//     marker "written by gradscope PROGRAM" (a comment in DOT, SVG and HTML), or with --overwrite.
//     A PNG cannot carry the marker: an existing one is replaced only with --overwrite.
//   - Nothing is written through a symbolic link, a FIFO or a device; every refusal is one line naming
//     the flag and the path, before any work. Only the directory itself is looked at, never its ancestors.
//   - "<target>.tmp-<pid>" beside a target is where a write of it happens. A run killed mid-write
//     leaves it behind; the user removes it (the next run writes under its own pid).
#pragma once

#include <filesystem>
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
  bool lists_files = false;     // a directory written as a whole
  std::map<std::string, std::string> files;  // relative '/'-separated path -> SHA-256 (hex)
};

// Reads DIR/gradscope-output.json strictly; throws gs::Error naming it if missing or malformed.
Manifest read_manifest(const std::filesystem::path& dir);
bool valid_relative(const std::string& name);  // relative, '/'-separated, no "." or ".." parts
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
// The first entry under `dir` that is neither the manifest nor listed in `m` (nor on the way to one).
std::string first_unlisted_file(const std::filesystem::path& dir, const Manifest& m);
// Refuses a path that could not be created (tried by creating and removing "<path>.tmp-<pid>").
void check_creatable(const std::filesystem::path& path, std::string_view flag);
// Throws gs::Error "FLAG PATH: WHAT", the form of every refusal of an output path.
[[noreturn]] void refuse_path(std::string_view flag, const std::filesystem::path& path, const std::string& what);

}  // namespace gs::nn
