// The one way gradscope runs another program (gnuplot for the plots, Graphviz's dot for the graphs):
// posix_spawnp, then wait. The child gets a process group of its own, so a Ctrl-C at the terminal
// reaches gradscope only (the terminal signals its foreground group, which the child has left): the
// child finishes its short job, and gradscope stops at its next safe point with every file whole
// (experiments/lib/interrupt.hpp). SIGINT and SIGTERM are at their defaults in the child.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gs::explorer {

// Runs argv (argv[0] looked up in PATH) in `dir` ("": here) with its stdout into the file `out` and its
// stderr into the file `err` (each relative to dir; "": this process's own), and waits for it. Returns
// its exit status, 128 + the signal that ended it, or 127 when argv[0] is not on PATH. Throws gs::Error
// when it cannot be started for another reason.
int spawn_and_wait(const std::vector<std::string>& argv, const std::filesystem::path& dir = {},
                   const std::filesystem::path& out = {}, const std::filesystem::path& err = {});

}  // namespace gs::explorer
