// The binaries' output directories, claimed before any work (the rules: nn/io/directory_write.hpp).
//   --out DIR (filled file by file): claim_output_dir creates DIR with a manifest naming the program and
//   "out", or reuses it when it is empty or holds that manifest. Files of other names in it are left alone.
//   --save DIR, --dump DIR (written as a whole at the end): check_output_dir refuses now what
//   nn::write_directory_atomically would refuse then, and creates nothing.
// Both take a lock for the rest of the process, and so do the single-file outputs --graph FILE and
// --html FILE (lock_output, after nn::check_output_file): flock(2) on TARGET.lock beside the target, holding
// "PID PROGRAM". A second run asking for the same output is refused at once, naming the holder; the
// kernel releases the lock however the process ends, a normal exit removes the file, and a file left
// by a process that is gone is taken over with a note on stderr.
// While a grid writes into --out, an INCOMPLETE file there says that its files are not all of one run yet.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "nn/io/directory_write.hpp"

namespace gs::experiments {

// Returns the outermost directory it created (DIR or an ancestor), or "" when DIR was there.
std::filesystem::path claim_output_dir(const std::filesystem::path& dir, std::string_view flag, const nn::OutputTag& tag);
// For a run refused after claim_output_dir created `created`: removes DIR if it holds nothing but the
// manifest, and the empty directories up to `created`; nothing if `created` is "".
void remove_unused_output_dir(const std::filesystem::path& dir, const std::filesystem::path& created);
void check_output_dir(const std::filesystem::path& dir, std::string_view flag, const nn::OutputTag& tag);
void lock_output(const std::filesystem::path& target, std::string_view flag, std::string_view program);

// The --out directory of a grid while its files are written (Experiment::main calls these). The first
// file this process writes inside `dir` (a table, a plot, a CSV) first puts INCOMPLETE into it, which
// output_complete() removes once every file is written: an interrupted or failed run leaves the folder
// as it was (nothing written yet) or marked. output_complete returns whether the marker had been written.
inline constexpr const char* incomplete_marker = "INCOMPLETE";
void watch_output(const std::filesystem::path& dir, const std::string& program);
void mark_writing(const std::filesystem::path& path);
bool output_complete();
bool output_marked_incomplete();

}  // namespace gs::experiments
