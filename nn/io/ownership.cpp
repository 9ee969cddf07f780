#include "nn/io/ownership.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/io/json.hpp"

namespace gs::nn {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t manifest_limit = std::size_t{64} << 20;  // 64 MiB: a manifest lists file names
constexpr std::size_t signature_window = 4096;                 // where a file's signature must be

[[noreturn]] void fail(std::string_view flag, const fs::path& path, const std::string& what) {
  throw Error(std::string(flag) + " " + path.string() + ": " + what);
}

std::string describe(const OutputTag& tag) {
  return "gradscope " + tag.program + "'s " + (tag.kind == "out" ? "output directory" : tag.kind);
}

bool same(const OutputTag& a, const OutputTag& b) { return a.program == b.program && a.kind == b.kind; }

// A manifest's file name: relative, '/'-separated, never "..", "." or empty segments.
bool valid_relative(const std::string& name) {
  if (name.empty() || name.front() == '/' || name.find('\0') != std::string::npos) return false;
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t end = std::min(name.find('/', start), name.size());
    const std::string part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// A process id as leftovers' names carry it, if it is one that kill() can ask about.
bool process_alive(long pid) {
  if (pid <= 0 || pid > INT_MAX) return true;  // not a process id: never "provably dead"
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// The pid in "<base>.tmp-<pid>", "<base>.old-<pid>", or either followed by ".<suffix>" (the
// "g.svg.tmp-123.dot" that rendering writes); nullopt if `name` is not such a name. With an empty
// base, any "<something>.tmp-<pid>..." matches (the leftovers inside a claimed directory).
struct Leftover {
  long pid;
  bool old;  // ".old-": the previous version of a directory, moved aside during its replacement
};
std::optional<Leftover> leftover_of(const std::string& name, const std::string& base) {
  for (const std::string mark : {".tmp-", ".old-"}) {
    // The mark starts right after `base`, or, without a base, at its last occurrence (not at 0).
    const std::size_t at = base.empty() ? name.rfind(mark) : base.size();
    if (at == std::string::npos || at == 0 || at + mark.size() > name.size()) continue;
    if (name.compare(at, mark.size(), mark) != 0 || (!base.empty() && name.compare(0, at, base) != 0)) continue;
    const std::size_t digits = at + mark.size();
    std::size_t end = digits;
    while (end < name.size() && end - digits < 10 && name[end] >= '0' && name[end] <= '9') ++end;
    if (end == digits || (end < name.size() && name[end] != '.')) continue;
    return Leftover{std::stol(name.substr(digits, end - digits)), mark == ".old-"};
  }
  return std::nullopt;
}

bool carries_signature(const fs::path& file, std::string_view program) {
  try {
    return read_file_head(file, signature_window).find(output_signature(program)) != std::string::npos;
  } catch (const Error&) {
    return false;
  }
}

bool has_manifest_of(const fs::path& dir, const OutputTag& tag) {
  try {
    const Manifest m = read_manifest(dir);
    return m.tag.program == tag.program && (tag.kind.empty() || m.tag.kind == tag.kind);
  } catch (const Error&) {
    return false;
  }
}

// Removes (or, for `restore_to`, renames back) the leftovers in `parent` whose names match `base`.
void remove_leftovers(const fs::path& parent, const std::string& base, const OutputTag& tag, bool inside_claimed,
                      const fs::path* restore_to) {
  std::error_code ec;
  fs::directory_iterator it(parent, ec), end;
  std::vector<std::pair<fs::path, Leftover>> found;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (const auto l = leftover_of(name, base); l && l->pid != ::getpid() && !process_alive(l->pid))
      found.push_back({it->path(), *l});
  }
  for (const auto& [path, leftover] : found) {
    const fs::file_status st = fs::symlink_status(path, ec);
    const bool ours = fs::is_directory(st) ? has_manifest_of(path, tag)
                      : fs::is_regular_file(st) ? inside_claimed || carries_signature(path, tag.program)
                                                : false;
    if (!ours) continue;
    if (restore_to && leftover.old && fs::is_directory(st) && !fs::exists(fs::symlink_status(*restore_to, ec))) {
      fs::rename(path, *restore_to, ec);  // the previous output, moved aside by a replacement that was killed
      if (!ec) continue;
    }
    fs::remove_all(path, ec);
  }
}

// ---- one writer per output ----

// The locks this process holds, by lock file: released, and their files removed, when it exits.
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
HeldLocks& held_locks() {
  static HeldLocks locks;
  return locks;
}

// "PID PROGRAM" as a lock file holds it; pid 0 if it holds nothing readable.
std::pair<long, std::string> lock_holder(int fd) {
  char buf[256] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  long pid = 0;
  char program[128] = {};
  if (n <= 0 || std::sscanf(buf, "%ld %127s", &pid, program) < 1) return {0, ""};
  return {pid, program};
}

// Where a target's ancestors are: each existing directory above `target` (absolute), nearest first.
std::vector<fs::path> existing_ancestors(const fs::path& target) {
  std::error_code ec;
  fs::path p = fs::absolute(target, ec).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  std::vector<fs::path> out;
  for (fs::path a = p.parent_path(); !a.empty(); a = a.parent_path()) {
    if (fs::is_directory(a, ec)) out.push_back(a);
    if (a == a.root_path()) break;
  }
  return out;
}

}  // namespace

fs::path lock_file_of(const fs::path& target) {
  std::error_code ec;
  fs::path p = fs::absolute(target, ec).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "out/" -> "out"
  if (p == p.root_path()) return p / ".gradscope.lock";
  return p.parent_path() / (p.filename().string() + ".lock");
}

void lock_output(const fs::path& target, std::string_view flag, std::string_view program) {
  const fs::path file = lock_file_of(target);
  HeldLocks& held = held_locks();
  std::lock_guard<std::mutex> guard(held.mutex);
  if (held.fds.count(file.string())) return;  // this process holds it already
  std::error_code ec;
  if (!fs::exists(file.parent_path(), ec)) {
    check_creatable(file.parent_path(), flag);
    fs::create_directories(file.parent_path(), ec);
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) fail(flag, target, "cannot create its lock file " + file.string() + ": " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const auto [pid, who] = lock_holder(fd);
      ::close(fd);
      if (err != EWOULDBLOCK) fail(flag, target, "cannot lock " + file.string() + ": " + std::strerror(err));
      fail(flag, target, "another run is writing it: " + (who.empty() ? std::string("a process") : "gradscope " + who) +
                             (pid > 0 ? ", pid " + std::to_string(pid) : std::string()) + " (it holds " + file.string() +
                             "); wait for it to end, or choose another name");
    }
    // Locked; but if the holder before us removed the file meanwhile, the lock is on a file no one else
    // sees: try again on the one at the path now.
    struct stat by_fd {}, by_path {};
    if (::fstat(fd, &by_fd) != 0 || ::stat(file.c_str(), &by_path) != 0 || by_fd.st_ino != by_path.st_ino ||
        by_fd.st_dev != by_path.st_dev) {
      ::close(fd);
      continue;
    }
    const auto [pid, who] = lock_holder(fd);
    if (pid > 0 && pid != ::getpid() && !process_alive(pid))
      std::fprintf(stderr, "note: %s %s: took over the lock of gradscope %s, pid %ld, which ended without removing it\n",
                   std::string(flag).c_str(), target.string().c_str(), who.c_str(), pid);
    const std::string mine = std::to_string(::getpid()) + " " + std::string(program) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, mine.data(), mine.size(), 0) != static_cast<ssize_t>(mine.size())) {
      ::close(fd);
      fail(flag, target, "cannot write its lock file " + file.string() + ": " + std::strerror(errno));
    }
    held.fds[file.string()] = fd;
    return;
  }
  fail(flag, target, "its lock file " + file.string() + " keeps changing; is another run starting?");
}

void check_not_inside_whole_output(const fs::path& target, std::string_view flag) {
  std::error_code ec;
  for (const fs::path& a : existing_ancestors(target)) {
    if (!fs::exists(fs::symlink_status(a / manifest_name, ec))) continue;
    Manifest m;
    try {
      m = read_manifest(a);
    } catch (const Error&) {
      continue;  // not ours to judge here; the directory's own checks refuse it where it is read
    }
    if (m.lists_files)
      fail(flag, target, a.string() + " is " + describe(m.tag) + ", which holds exactly the files its manifest lists "
                         "(a file added would make it unreadable); write elsewhere");
  }
}

std::string this_program() { return program_invocation_short_name; }

std::string output_signature(std::string_view program) { return "written by gradscope " + std::string(program); }

std::string manifest_text(const OutputTag& tag, const std::vector<std::pair<std::string, std::string>>* files) {
  nlohmann::ordered_json m = {{"written_by", "gradscope"}, {"program", tag.program}, {"kind", tag.kind}};
  if (files) {
    m["files"] = nlohmann::ordered_json::object();
    for (const auto& [name, sha] : *files) m["files"][name] = sha;
  }
  return m.dump(2) + "\n";
}

Manifest read_manifest(const fs::path& dir) {
  const fs::path file = dir / manifest_name;
  const nlohmann::json doc = read_json_file(file, manifest_limit);
  const JsonField root(doc, file.string());
  if (root.at("written_by").as_string() != "gradscope") root.at("written_by").fail("is not \"gradscope\"");
  Manifest m;
  m.tag = {root.at("program").as_string(), root.at("kind").as_string()};
  if (root.has("files")) {
    m.lists_files = true;
    const JsonField files = root.at("files");
    for (const std::string& name : files.keys()) {
      const std::string& sha = files.at(name).as_string();
      if (!valid_relative(name)) files.at(name).fail("is not a file name inside the directory");
      if (!is_sha256_hex(sha)) files.at(name).fail("is not a SHA-256 (64 hex digits)");
      m.files[name] = sha;
    }
  }
  return m;
}

std::string why_not_replaceable(const fs::path& dir, const OutputTag& tag) {
  std::error_code ec;
  if (fs::is_empty(dir, ec) && !ec) return "";
  if (!fs::exists(fs::symlink_status(dir / manifest_name, ec)))
    return "is not empty and holds no " + std::string(manifest_name) + ", so it is not " + describe(tag);
  Manifest m;
  try {
    m = read_manifest(dir);
  } catch (const Error& e) {
    return "its manifest cannot be read (" + std::string(e.what()) + ")";
  }
  if (!same(m.tag, tag)) return "holds " + describe(m.tag) + ", not " + describe(tag);
  if (!m.lists_files) return "its manifest lists no files, so what it holds cannot be told apart from other files";
  if (const std::string name = first_unlisted_file(dir, m); !name.empty())
    return "holds " + name + ", which " + describe(tag) + " did not write";
  return "";
}

std::string first_unlisted_file(const fs::path& dir, const Manifest& m) {
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().lexically_relative(dir).generic_string();
    const fs::file_status st = it->symlink_status(ec);
    if (ec) break;
    const bool listed = fs::is_regular_file(st) && (name == manifest_name || m.files.count(name));
    const auto next = m.files.lower_bound(name + "/");
    const bool on_the_way = fs::is_directory(st) && next != m.files.end() && next->first.rfind(name + "/", 0) == 0;
    if (!listed && !on_the_way) return name;
  }
  if (ec) return "(an entry that cannot be read: " + ec.message() + ")";
  return "";
}

void remove_stale_leftovers(const fs::path& target, const OutputTag& tag) {
  fs::path t = target.lexically_normal();
  if (!t.has_filename()) t = t.parent_path();  // "out/" -> "out"
  const std::string base = t.filename().string();
  if (base.empty() || base == "." || base == "..") return;
  remove_leftovers(t.has_parent_path() ? t.parent_path() : fs::path("."), base, tag, false, &t);
}

void check_creatable(const fs::path& path, std::string_view flag) {
  fs::path p = path.lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  // The nearest existing ancestor, and its child on the way to `path`.
  fs::path child = p, ancestor = p.parent_path();
  std::error_code ec;
  while (!ancestor.empty() && !fs::exists(fs::symlink_status(ancestor, ec))) {
    child = ancestor;
    ancestor = ancestor.parent_path();
  }
  if (ancestor.empty()) ancestor = ".";
  if (!fs::is_directory(ancestor, ec)) fail(flag, path, ancestor.string() + " is not a directory");
  const fs::path probe = temporary_name(child);  // what a write would create first
  if (::mkdir(probe.c_str(), 0700) != 0 && errno != EEXIST)
    fail(flag, path, "cannot create anything in " + ancestor.string() + ": " + std::strerror(errno));
  ::rmdir(probe.c_str());
}

void claim_output_dir(const fs::path& dir, std::string_view flag, const OutputTag& tag) {
  check_not_inside_whole_output(dir, flag);
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);  // a symbolic link to a directory is used as that directory
  const fs::path manifest = dir / manifest_name;
  const std::string text = manifest_text(tag, nullptr);
  auto write_manifest = [&] {  // every check passed: lock it (a second run stops here), then mark it
    lock_output(dir, flag, tag.program);
    try {
      write_file_atomically(manifest, text);
    } catch (const Error& e) {
      fail(flag, dir, std::string("cannot write into it: ") + e.what());
    }
  };
  if (!fs::exists(st)) {
    check_creatable(dir, flag);
    fs::create_directories(dir, ec);
    if (ec) fail(flag, dir, "cannot create it: " + ec.message());
    return write_manifest();
  }
  if (!fs::is_directory(st)) fail(flag, dir, "exists and is not a directory");
  if (fs::exists(fs::symlink_status(manifest, ec))) {
    Manifest m;
    try {
      m = read_manifest(dir);
    } catch (const Error& e) {
      fail(flag, dir, "its manifest cannot be read (" + std::string(e.what()) + "); choose another directory");
    }
    if (!same(m.tag, tag)) fail(flag, dir, "holds " + describe(m.tag) + ", not " + describe(tag) + "; choose another directory");
    remove_leftovers(dir, "", {tag.program, ""}, true, nullptr);
    return write_manifest();  // rewriting it shows that the directory is writable
  }
  if (!fs::is_empty(dir, ec) || ec)
    fail(flag, dir, "is not empty and holds no " + std::string(manifest_name) +
                        ", so gradscope did not write it; choose another directory or an empty one");
  write_manifest();
}

void check_output_dir(const fs::path& dir, std::string_view flag, const OutputTag& tag) {
  const fs::path name = dir.lexically_normal().filename();
  if (name == "." || name == "..") fail(flag, dir, "cannot be replaced as a whole; name a directory below it");
  check_not_inside_whole_output(dir, flag);
  remove_stale_leftovers(dir, tag);  // may move a previous output back into place first
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (fs::exists(st)) {
    if (fs::is_symlink(st)) fail(flag, dir, "is a symbolic link; name the directory itself");
    if (!fs::is_directory(st)) fail(flag, dir, "exists and is not a directory");
    if (const std::string why = why_not_replaceable(dir, tag); !why.empty()) fail(flag, dir, why + "; not replacing it");
  }
  check_creatable(dir, flag);
  lock_output(dir, flag, tag.program);  // every check passed: a second run is refused from here on
}

void check_output_file(const fs::path& file, std::string_view flag, std::string_view program) {
  const OutputTag tag{std::string(program), ""};
  check_not_inside_whole_output(file, flag);
  remove_stale_leftovers(file, tag);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(file, ec);
  if (fs::exists(st)) {
    if (fs::is_symlink(st)) fail(flag, file, "is a symbolic link; name the file itself");
    if (fs::is_directory(st)) fail(flag, file, "is a directory");
    if (!fs::is_regular_file(st)) fail(flag, file, "is not a regular file (a FIFO, a device or a socket)");
    if (!carries_signature(file, program))
      fail(flag, file, "exists and was not written by gradscope " + std::string(program) + " (its first 4 KiB lack \"" +
                           output_signature(program) + "\"); not overwriting it: remove it or choose another name");
  }
  check_creatable(file, flag);
}

std::string png_with_signature(std::string_view png, std::string_view program) {
  // A PNG: an 8-byte signature, then chunks (4-byte big-endian length, 4-byte type, data, CRC-32 of
  // type and data), the first one IHDR with 13 bytes of data. The new chunk goes right after IHDR.
  constexpr std::string_view magic("\x89PNG\r\n\x1a\n", 8);
  constexpr std::size_t after_ihdr = 8 + 4 + 4 + 13 + 4;
  if (png.size() < after_ihdr || png.substr(0, 8) != magic || png.substr(12, 4) != "IHDR" ||
      png.substr(8, 4) != std::string_view("\0\0\0\x0d", 4))
    throw Error("png_with_signature: not a PNG image");
  const std::string data = "Software" + std::string(1, '\0') + output_signature(program);
  const std::string type_and_data = "tEXt" + data;
  auto big_endian = [](std::uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                       static_cast<char>(v)};
  };
  const auto crc = static_cast<std::uint32_t>(
      ::crc32(0L, reinterpret_cast<const Bytef*>(type_and_data.data()), static_cast<uInt>(type_and_data.size())));
  return std::string(png.substr(0, after_ihdr)) + big_endian(static_cast<std::uint32_t>(data.size())) + type_and_data +
         big_endian(crc) + std::string(png.substr(after_ihdr));
}

}  // namespace gs::nn
