#include "experiments/lib/outputs.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <map>
#include <mutex>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::experiments {

namespace fs = std::filesystem;
using nn::refuse_path;

namespace {

// The locks this process holds, by lock file: their files are removed when it exits.
struct HeldLocks {
  std::mutex mutex;
  std::map<std::string, int> fds;
  ~HeldLocks() {
    for (const auto& [file, fd] : fds) {
      ::unlink(file.c_str());  // first: a process that opened the file before sees another inode and retries
      ::close(fd);
    }
  }
};
HeldLocks held_locks;

// "PID PROGRAM" as a lock file holds it; pid 0 if it holds nothing readable.
std::pair<long, std::string> lock_holder(int fd) {
  char buf[256] = {}, program[128] = {};
  long pid = 0;
  if (::pread(fd, buf, sizeof buf - 1, 0) <= 0 || std::sscanf(buf, "%ld %127s", &pid, program) < 1) return {0, ""};
  return {pid, program};
}

// TARGET.lock beside the target ("/.gradscope.lock" for the root).
fs::path lock_file_of(const fs::path& target) {
  std::error_code ec;
  fs::path p = fs::absolute(target, ec).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "out/" -> "out"
  return p == p.root_path() ? p / ".gradscope.lock" : p.parent_path() / (p.filename().string() + ".lock");
}

// Gives up the lock on `target` now (as the process's end would), if this process holds it.
void unlock_output(const fs::path& target) {
  const std::string file = lock_file_of(target).string();
  std::lock_guard<std::mutex> guard(held_locks.mutex);
  const auto it = held_locks.fds.find(file);
  if (it == held_locks.fds.end()) return;
  ::unlink(file.c_str());
  ::close(it->second);
  held_locks.fds.erase(it);
}

}  // namespace

void lock_output(const fs::path& target, std::string_view flag, std::string_view program) {
  std::error_code ec;
  const fs::path file = lock_file_of(target);
  std::lock_guard<std::mutex> guard(held_locks.mutex);
  if (held_locks.fds.count(file.string())) return;  // this process holds it already
  fs::create_directories(file.parent_path(), ec);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) refuse_path(flag, target, "cannot create its lock file " + file.string() + ": " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const auto [pid, who] = lock_holder(fd);
      ::close(fd);
      if (err != EWOULDBLOCK) refuse_path(flag, target, "cannot lock " + file.string() + ": " + std::strerror(err));
      refuse_path(flag, target, "another run is writing it: " + (who.empty() ? std::string("a process") : "gradscope " + who) +
                             (pid > 0 ? ", pid " + std::to_string(pid) : std::string()) + " (it holds " + file.string() +
                             "); wait for it to end, or choose another name");
    }
    // If the holder before us removed the file meanwhile, this lock is on a file no one else sees.
    struct stat by_fd {}, by_path {};
    if (::fstat(fd, &by_fd) != 0 || ::stat(file.c_str(), &by_path) != 0 || by_fd.st_ino != by_path.st_ino) {
      ::close(fd);
      continue;
    }
    const auto [pid, who] = lock_holder(fd);
    if (pid > 0 && pid != ::getpid())
      std::fprintf(stderr, "note: %s %s: took over the lock of gradscope %s, pid %ld, which ended without removing it\n",
                   std::string(flag).c_str(), target.string().c_str(), who.c_str(), pid);
    const std::string mine = std::to_string(::getpid()) + " " + std::string(program) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, mine.data(), mine.size(), 0) != static_cast<ssize_t>(mine.size())) {
      ::close(fd);
      refuse_path(flag, target, "cannot write its lock file " + file.string() + ": " + std::strerror(errno));
    }
    held_locks.fds[file.string()] = fd;
    return;
  }
  refuse_path(flag, target, "its lock file " + file.string() + " keeps changing; is another run starting?");
}

fs::path claim_output_dir(const fs::path& dir, std::string_view flag, const nn::OutputTag& tag) {
  fs::path created;
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);  // a symbolic link to a directory is used as that directory
  const fs::path manifest = dir / nn::manifest_name;
  if (!fs::exists(st)) {
    nn::check_creatable(dir, flag);
    created = dir;  // the outermost directory that is not there yet
    for (fs::path up = dir.lexically_normal().parent_path(); !up.empty() && !fs::exists(up, ec) && up != up.parent_path();
         up = up.parent_path())
      created = up;
    fs::create_directories(dir, ec);
    if (ec) refuse_path(flag, dir, "cannot create it: " + ec.message());
  } else if (!fs::is_directory(st)) {
    refuse_path(flag, dir, "exists and is not a directory");
  } else if (fs::exists(fs::symlink_status(manifest, ec))) {
    nn::Manifest m;
    try {
      m = nn::read_manifest(dir);
    } catch (const Error& e) {
      refuse_path(flag, dir, "its manifest cannot be read (" + std::string(e.what()) + "); choose another directory");
    }
    if (m.tag.program != tag.program || m.tag.kind != tag.kind)
      refuse_path(flag, dir, "holds " + nn::describe(m.tag) + ", not " + nn::describe(tag) + "; choose another directory");
  } else if (!fs::is_empty(dir, ec) || ec) {
    refuse_path(flag, dir, "is not empty and holds no " + std::string(nn::manifest_name) +
                        ", so gradscope did not write it; choose another directory or an empty one");
  }
  lock_output(dir, flag, tag.program);  // every check passed: a second run stops here
  try {
    nn::write_file_atomically(manifest, nn::manifest_text(tag, nullptr));  // also shows that it is writable
  } catch (const Error& e) {
    refuse_path(flag, dir, std::string("cannot write into it: ") + e.what());
  }
  return created;
}

void remove_unused_output_dir(const fs::path& dir, const fs::path& created) {
  if (created.empty()) return;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.path().filename() != nn::manifest_name) return;  // something was written: it stays
  if (ec) return;
  fs::remove(dir / nn::manifest_name, ec);
  unlock_output(dir);  // its lock file sits in the parent, which may be ours to remove too
  const fs::path top = created.lexically_normal();
  for (fs::path d = dir.lexically_normal(); !d.empty(); d = d.parent_path()) {
    if (!fs::remove(d, ec)) return;  // fs::remove removes a directory only when it is empty
    if (d == top) return;
  }
}

void check_output_dir(const fs::path& dir, std::string_view flag, const nn::OutputTag& tag) {
  const fs::path name = dir.lexically_normal().filename();
  if (name == "." || name == "..") refuse_path(flag, dir, "cannot be replaced as a whole; name a directory below it");
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (fs::exists(st)) {
    if (fs::is_symlink(st)) refuse_path(flag, dir, "is a symbolic link; name the directory itself");
    if (!fs::is_directory(st)) refuse_path(flag, dir, "exists and is not a directory");
    if (const std::string why = nn::why_not_replaceable(dir, tag); !why.empty()) refuse_path(flag, dir, why + "; not replacing it");
  }
  nn::check_creatable(dir, flag);
  lock_output(dir, flag, tag.program);  // every check passed: a second run is refused from here on
}

// ---- the --out directory of a grid while its files are written ----

namespace {
std::mutex watched_mutex;
std::filesystem::path watched_dir;  // "" when no directory is watched
std::string watched_program;
bool marked = false;
}  // namespace

void watch_output(const std::filesystem::path& dir, const std::string& program) {
  std::lock_guard<std::mutex> lock(watched_mutex);
  watched_dir = std::filesystem::absolute(dir).lexically_normal();
  watched_program = program;
  marked = false;
}

void mark_writing(const std::filesystem::path& path) {
  std::lock_guard<std::mutex> lock(watched_mutex);
  if (watched_dir.empty() || marked) return;
  const std::filesystem::path p = std::filesystem::absolute(path).lexically_normal();
  const auto [end, rest] = std::mismatch(watched_dir.begin(), watched_dir.end(), p.begin(), p.end());
  if (end != watched_dir.end()) return;  // not inside the watched directory
  nn::write_file_atomically(watched_dir / incomplete_marker,
                            "gradscope " + watched_program + " was writing the files of this folder when it stopped "
                            "(a signal or an error): some may be from this run and some from an earlier one, some "
                            "missing. Run it again to complete them; a run that completes removes this file.\n");
  marked = true;
}

bool output_complete() {
  std::lock_guard<std::mutex> lock(watched_mutex);
  if (!watched_dir.empty()) std::filesystem::remove(watched_dir / incomplete_marker);
  const bool was = marked;
  watched_dir.clear();
  marked = false;
  return was;
}

bool output_marked_incomplete() {
  std::lock_guard<std::mutex> lock(watched_mutex);
  return marked;
}

}  // namespace gs::experiments
