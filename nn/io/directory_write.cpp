#include "nn/io/directory_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/io/checksum.hpp"

namespace gs::nn {

namespace fs = std::filesystem;

namespace {

// Flushes everything written on the file system of `dir` to the disk: one syncfs, rather than an
// fsync per file (which costs a few milliseconds each on a journalling file system).
void sync_tree(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int rc = fd < 0 ? -1 : ::syncfs(fd), e = errno;
  if (fd >= 0) ::close(fd);
  if (rc != 0) throw Error("cannot sync " + dir.string() + " to the disk: " + std::strerror(e));
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

  const fs::path tmp = temporary_name(target), old = target.string() + ".old-" + std::to_string(::getpid());
  if (!fs::create_directory(tmp, ec) || ec)
    throw Error("cannot create " + tmp.string() + ": " + (ec ? ec.message() : "it exists"));
  try {
    DirectoryWriter writer(tmp);
    fill(writer);
    std::ofstream manifest(tmp / manifest_name);
    if (!(manifest << manifest_text(tag, &writer.files_)).flush()) throw Error("cannot write " + (tmp / manifest_name).string());
    sync_tree(tmp);
    if (existed && ::rename(target.c_str(), old.c_str()) != 0)
      throw Error("cannot move " + target.string() + " aside to " + old.string() + ": " + std::strerror(errno));
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    if (existed) ::rename(old.c_str(), target.c_str());  // put it back
    fs::remove_all(tmp, ec);
    throw Error("cannot put " + tmp.string() + " in place of " + target.string() + ": " + why);
  }
  fsync_directory(parent);  // the renames
  if (existed && (fs::remove_all(old, ec), ec))
    throw Error("wrote " + target.string() + " but cannot remove its previous version " + old.string() + ": " + ec.message());
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
