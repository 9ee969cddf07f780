#include "nn/io/directory_write.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>  // renameat2, RENAME_EXCHANGE
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/io/checksum.hpp"

namespace gs::nn {

namespace fs = std::filesystem;

namespace {

// A test stops the process here when GRADSCOPE_TEST_PAUSE_AT names this point (see the header).
void pause_point(const char* name) {
  const char* at = std::getenv("GRADSCOPE_TEST_PAUSE_AT");
  if (at && std::strcmp(at, name) == 0) ::raise(SIGSTOP);
}

// Flushes everything written on the file system of `dir` to the disk: one syncfs, rather than an
// fsync per file (which costs a few milliseconds each on a journalling file system).
void sync_tree(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int rc = fd < 0 ? -1 : ::syncfs(fd), e = errno;
  if (fd >= 0) ::close(fd);
  if (rc != 0) throw Error("cannot sync " + dir.string() + " to the disk: " + std::strerror(e));
}

// Puts the complete directory `tmp` in place of `target` (`existed`: a directory to replace) and
// removes the previous version: the second half of write_directory_atomically (the header says how).
void swap_into_place(const fs::path& tmp, const fs::path& target, const fs::path& parent, bool existed) {
  std::error_code ec;
  pause_point("directory.swapping");
  fs::path previous = tmp;  // where an exchange leaves the previous version
  int rc = existed ? ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE)
                   : ::rename(tmp.c_str(), target.c_str());
  if (rc != 0 && existed && (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP)) {
    // No exchange on this file system: two renames; a run killed between them leaves the previous
    // version whole under the .old name.
    previous = target.string() + ".old-" + std::to_string(::getpid());
    rc = ::rename(target.c_str(), previous.c_str());
    if (rc == 0 && (rc = ::rename(tmp.c_str(), target.c_str())) != 0) fs::rename(previous, target, ec);  // put it back
  }
  if (rc != 0) {
    const std::string why = std::strerror(errno);
    fs::remove_all(tmp, ec);
    throw Error("cannot put " + tmp.string() + " in place of " + target.string() + ": " + why);
  }
  fsync_directory(parent);  // the rename
  if (!existed) return;
  pause_point("directory.cleaning");
  if (fs::remove_all(previous, ec); ec)
    throw Error("wrote " + target.string() + " but cannot remove its previous version " + previous.string() + ": " +
                ec.message());
}

}  // namespace

void DirectoryWriter::write(const std::string& relative, std::string_view bytes) {
  if (!valid_relative(relative) || relative == manifest_name)
    throw Error("cannot write " + relative + " into " + root_.string() + ": not a plain relative file name");
  if (std::any_of(files_.begin(), files_.end(), [&](const auto& f) { return f.first == relative; }))
    throw Error("cannot write " + relative + " twice into " + root_.string());
  const fs::path path = root_ / relative;
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  if (!out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())).flush()) throw Error("cannot write " + path.string());
  files_.push_back({relative, sha256_hex(bytes)});
  if (files_.size() == 1) pause_point("directory.filling");
}

void write_directory_atomically(const fs::path& dir, const OutputTag& tag, const std::function<void(DirectoryWriter&)>& fill) {
  fs::path target = dir.lexically_normal();
  if (!target.has_filename()) target = target.parent_path();  // "out/" -> "out"
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(target, ec);
  const bool existed = fs::exists(st);
  if (existed && (fs::is_symlink(st) || !fs::is_directory(st)))
    throw Error("cannot write " + target.string() + ": it exists and is not a directory; not replacing it");
  if (const std::string why = existed ? why_not_replaceable(target, tag) : ""; !why.empty())
    throw Error("cannot write " + target.string() + ": it " + why + "; not replacing it");
  if (fs::create_directories(parent, ec); ec) throw Error("cannot create " + parent.string() + ": " + ec.message());

  const fs::path tmp = temporary_name(target);
  if (!fs::create_directory(tmp, ec) || ec)
    throw Error("cannot create " + tmp.string() + ": " + (ec ? ec.message() : "it exists"));
  try {
    DirectoryWriter writer(tmp);
    fill(writer);
    std::ofstream manifest(tmp / manifest_name);
    if (!(manifest << manifest_text(tag, &writer.files_)).flush()) throw Error("cannot write " + (tmp / manifest_name).string());
    sync_tree(tmp);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  swap_into_place(tmp, target, parent, existed);
}

VerifiedDirectory::VerifiedDirectory(fs::path dir, const std::string& kind) : dir_(std::move(dir)) {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) throw Error(dir_.string() + " is not a directory");
  if (!fs::exists(fs::symlink_status(dir_ / manifest_name, ec)))
    throw Error(dir_.string() + " is not a gradscope " + kind + ": it has no " + manifest_name + " (written by something else)");
  manifest_ = read_manifest(dir_);
  const std::string file = (dir_ / manifest_name).string();
  if (manifest_.tag.kind != kind)
    throw Error(file + ": this directory is " +
                (manifest_.tag.kind == "out" ? "an output directory (--out)" : "a " + manifest_.tag.kind) + " of gradscope " +
                manifest_.tag.program + ", not a " + kind);
  if (!manifest_.lists_files) throw Error(file + ": lists no files: the directory was not completely written");
}

std::string VerifiedDirectory::read(const std::string& relative, std::size_t max_bytes) const {
  const fs::path path = dir_ / relative;
  if (!lists(relative)) throw Error(path.string() + " is not listed in " + (dir_ / manifest_name).string());
  std::string bytes = read_file(path, max_bytes);
  if (const std::string sha = sha256_hex(bytes); sha != manifest_.files.at(relative))
    throw Error(path.string() + ": its SHA-256 is " + sha + ", the manifest says " + manifest_.files.at(relative) +
                " (the file was changed or corrupted after it was written)");
  return bytes;
}

void VerifiedDirectory::refuse_unlisted_files() const {
  if (const std::string name = first_unlisted_file(dir_, manifest_); !name.empty())
    throw Error((dir_ / name).string() + " is not listed in " + (dir_ / manifest_name).string() + ": gradscope " +
                manifest_.tag.program + " did not write it");
}

}  // namespace gs::nn
