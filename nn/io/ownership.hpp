// Who wrote an output: gradscope never deletes or overwrites what it did not write.
//
// Every directory gradscope writes holds a manifest, DIR/gradscope-output.json, naming the program and
// the kind of output:
//   {"written_by": "gradscope", "program": "train", "kind": "checkpoint", "files": {"config.json": "<sha256>", ...}}
// "files" (every file with its SHA-256) is there in directories written as a whole, checkpoints and
// dumps (nn/io/directory_write.hpp); a directory filled file by file (--out) has none.
//
// The rules, each checked before any work starts by the call named:
//   - A directory filled file by file (--out DIR), claim_output_dir: DIR is created, or reused when it
//     is empty or its manifest names this program and this kind. Files of other names in it are left
//     alone.
//   - A directory written as a whole (--save DIR, --dump DIR), check_output_dir: DIR is absent, empty,
//     or this program's earlier output of this kind holding only the files its manifest lists (a file
//     the user added makes it foreign). write_directory_atomically applies the same rule when it
//     replaces DIR.
//   - A single file (--graph FILE, --html FILE), check_output_file: FILE is absent, or a regular file
//     whose first 4 KiB carry output_signature(program), "written by gradscope PROGRAM", which each
//     writer puts in its file (a comment in DOT, SVG and HTML; a PNG tEXt chunk, png_with_signature).
//   - Anything else at the path is refused with one line naming the flag and the path: a non-empty
//     directory without this program's manifest, a file where a directory goes or the reverse, a
//     symbolic link, a FIFO or device, a place that cannot be written.
//   - Leftovers of an interrupted write of the same output ("<target>.tmp-<pid>", "<target>.old-<pid>",
//     files or directories, beside the target or inside a claimed directory) are removed, only when the
//     process <pid> is not running and they are provably this program's: a directory by its manifest, a
//     file by its signature or by lying in a directory this program claimed. If the target directory is
//     missing and a "<target>.old-<pid>" of it is there (a run killed between the two renames of a
//     directory replacement without RENAME_EXCHANGE), it is renamed back into place.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gs::nn {

// What a manifest says: the program ("train", "gradflow") and the kind of output ("checkpoint",
// "dump", "out" for --out directories).
struct OutputTag {
  std::string program;
  std::string kind;
};

inline constexpr const char* manifest_name = "gradscope-output.json";

// A manifest as read back. Relative paths use '/' and never leave the directory ("../x" is refused).
struct Manifest {
  OutputTag tag;
  bool lists_files = false;                  // "files" is present: a directory written as a whole
  std::map<std::string, std::string> files;  // relative path -> SHA-256 (hex)
};

// Reads DIR/gradscope-output.json strictly; throws gs::Error naming it if it is missing or malformed.
Manifest read_manifest(const std::filesystem::path& dir);

// The manifest's text for `tag`, with "files" when `files` is given (in that order).
std::string manifest_text(const OutputTag& tag, const std::vector<std::pair<std::string, std::string>>* files);

// --out DIR: creates DIR (and its parents) with a manifest, or reuses it (see the rules above), and
// removes leftovers in it. Throws gs::Error "FLAG DIR: ..." otherwise.
void claim_output_dir(const std::filesystem::path& dir, std::string_view flag, const OutputTag& tag);

// --save DIR, --dump DIR: refuses now what write_directory_atomically would refuse at the end, checks
// that DIR can be created, and removes leftovers of an earlier interrupted write. Creates nothing.
void check_output_dir(const std::filesystem::path& dir, std::string_view flag, const OutputTag& tag);

// --graph FILE: refuses anything but an absent file or this program's own earlier file, checks that
// the file can be created, and removes leftovers of an earlier interrupted write. Creates nothing.
void check_output_file(const std::filesystem::path& file, std::string_view flag, std::string_view program);

// The running executable's name ("train", "gradflow"): glibc's program_invocation_short_name. For
// callers that do not know which program they serve; a binary passes its own name.
std::string this_program();

// "written by gradscope PROGRAM": what a file must carry in its first 4 KiB to be replaceable.
std::string output_signature(std::string_view program);

// A PNG with a tEXt chunk "Software" = output_signature(program) right after its header chunk (PNG's
// own keyword for the program that made the image). Throws gs::Error if `png` is not a PNG.
std::string png_with_signature(std::string_view png, std::string_view program);

// "" if `dir` (an existing directory) may be replaced as a whole by `tag`'s output: empty, or its
// manifest names `tag` and lists every file in it. Otherwise why not, e.g. "holds notes.txt, which
// gradscope train did not write".
std::string why_not_replaceable(const std::filesystem::path& dir, const OutputTag& tag);

// The first entry of `dir` (recursively, by relative path) that is neither the manifest, a file `m`
// lists, nor a directory holding one; "" if there is none.
std::string first_unlisted_file(const std::filesystem::path& dir, const Manifest& m);

// Removes the leftovers of interrupted writes of `target` (see the rules above); a directory target's
// leftovers must have a manifest naming `tag`, a file target's must carry tag.program's signature.
void remove_stale_leftovers(const std::filesystem::path& target, const OutputTag& tag);

// One writer per output: claim_output_dir and check_output_dir lock their directory for the rest of the
// process with lock_output. The lock is flock(2) on TARGET.lock beside the target (a directory written as
// a whole is swapped, so the lock cannot live inside it), holding "PID PROGRAM"; the kernel releases it
// when the process ends, however it ends, and a normal exit removes the file. A second process asking
// for the same output is refused at once, naming the holder; a lock file left by a process that is no
// longer running is taken over with a note on stderr. Calling it again in the same process is a no-op.
std::filesystem::path lock_file_of(const std::filesystem::path& target);
void lock_output(const std::filesystem::path& target, std::string_view flag, std::string_view program);

// Throws gs::Error "FLAG PATH: ..." if a directory above `target` is a directory written as a whole (a
// checkpoint or a dump: its manifest lists its files), where any file added makes it unreadable.
void check_not_inside_whole_output(const std::filesystem::path& target, std::string_view flag);

// Throws gs::Error "FLAG PATH: ..." unless `path` could be created: its nearest existing ancestor is
// a directory in which this process can create an entry (tried by creating and removing one).
void check_creatable(const std::filesystem::path& path, std::string_view flag);

}  // namespace gs::nn
