#include "nn/io/directory_write.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/io/json.hpp"

namespace gs::nn {

namespace fs = std::filesystem;

namespace {

// The first entry under `dir` that is neither the manifest nor listed in `m`, nor a directory on the way
// to a listed file; "" if there is none.
std::string first_unlisted_file(const fs::path& dir, const Manifest& m) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().lexically_relative(dir).generic_string();
    const fs::file_status st = it->symlink_status(ec);
    const auto next = m.files.lower_bound(name + "/");
    if (!ec && !(fs::is_regular_file(st) && (name == manifest_name || m.files.count(name))) &&
        !(fs::is_directory(st) && next != m.files.end() && next->first.rfind(name + "/", 0) == 0))
      return name;
  }
  return ec ? "(an entry that cannot be read: " + ec.message() + ")" : "";
}

}  // namespace

void refuse_path(std::string_view flag, const fs::path& path, const std::string& what) {
  throw Error(std::string(flag) + " " + path.string() + ": " + what);
}

std::string this_program() { return program_invocation_short_name; }
std::string output_signature(std::string_view program) { return "written by gradscope " + std::string(program); }
std::string describe(const OutputTag& tag) {
  return "gradscope " + tag.program + "'s " + (tag.kind == "out" ? "output directory" : tag.kind);
}

std::string manifest_text(const OutputTag& tag, const std::vector<std::pair<std::string, std::string>>* files) {
  nlohmann::ordered_json m = {{"written_by", "gradscope"}, {"program", tag.program}, {"kind", tag.kind}};
  if (files) {
    m["files"] = nlohmann::ordered_json::object();
    for (const auto& [name, sha] : *files) m["files"][name] = sha;
  }
  return m.dump(2) + "\n";
}

Manifest read_manifest(const fs::path& dir) {
  const std::string file = (dir / manifest_name).string();
  const nlohmann::json doc = read_json_file(file, std::size_t{64} << 20);  // 64 MiB: it lists file names
  try {
    if (doc.at("written_by").get<std::string>() != "gradscope") throw Error(file + ": written_by is not \"gradscope\"");
    return {{doc.at("program").get<std::string>(), doc.at("kind").get<std::string>()},
            doc.value("files", std::map<std::string, std::string>())};
  } catch (const nlohmann::json::exception& e) {
    throw Error(json_error(file, e));
  }
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
  if (m.tag.program != tag.program || m.tag.kind != tag.kind) return "holds " + describe(m.tag) + ", not " + describe(tag);
  if (const std::string name = first_unlisted_file(dir, m); !name.empty())
    return "holds " + name + ", which " + describe(tag) + " did not write";
  return "";
}

void check_creatable(const fs::path& path, std::string_view flag) {
  fs::path p = path.lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  fs::path child = p, ancestor = p.parent_path();  // the nearest existing ancestor, and its child on the way
  std::error_code ec;
  for (; !ancestor.empty() && !fs::exists(fs::symlink_status(ancestor, ec)); ancestor = ancestor.parent_path()) child = ancestor;
  if (ancestor.empty()) ancestor = ".";
  if (!fs::is_directory(ancestor, ec)) refuse_path(flag, path, ancestor.string() + " is not a directory");
  const fs::path probe = temporary_name(child);  // what a write would create first
  if (::mkdir(probe.c_str(), 0700) != 0 && errno != EEXIST)
    refuse_path(flag, path, "cannot create anything in " + ancestor.string() + ": " + std::strerror(errno));
  ::rmdir(probe.c_str());
}

void check_output_file(const fs::path& file, std::string_view flag, std::string_view program, bool overwrite) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(file, ec);
  if (fs::exists(st)) {
    if (fs::is_symlink(st)) refuse_path(flag, file, "is a symbolic link; name the file itself");
    if (fs::is_directory(st)) refuse_path(flag, file, "is a directory");
    if (!fs::is_regular_file(st)) refuse_path(flag, file, "is not a regular file (a FIFO, a device or a socket)");
    std::string head(4096, '\0');  // where the marker must be; an unreadable file is not provably ours
    std::ifstream(file, std::ios::binary).read(head.data(), static_cast<std::streamsize>(head.size()));
    if (!overwrite && head.find(output_signature(program)) == std::string::npos)
      refuse_path(flag, file, "exists and was not written by gradscope " + std::string(program) + " (its first 4 KiB lack \"" +
                                  output_signature(program) + "\"); not overwriting it: remove it, choose another name, "
                                  "or give --overwrite");
  }
  check_creatable(file, flag);
}

void DirectoryWriter::write(const std::string& relative, std::string_view bytes) {
  const fs::path path = root_ / relative, rel(relative);  // normal, relative and not upward: inside root_
  if (relative.empty() || relative == manifest_name || rel.is_absolute() || rel.lexically_normal().generic_string() != relative ||
      *rel.begin() == "..")
    throw Error("cannot write " + relative + " into " + root_.string() + ": not a plain relative file name");
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
  if (!fs::create_directory(tmp, ec) || ec) throw Error("cannot create " + tmp.string() + ": " + (ec ? ec.message() : "it exists"));
  try {
    DirectoryWriter writer(tmp);
    fill(writer);
    std::ofstream manifest(tmp / manifest_name);
    if (!(manifest << manifest_text(tag, &writer.files_)).flush()) throw Error("cannot write " + (tmp / manifest_name).string());
    const int fd = ::open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const int rc = fd < 0 ? -1 : ::syncfs(fd), err = errno;
    if (fd >= 0) ::close(fd);
    if (rc != 0) throw Error("cannot sync " + tmp.string() + " to the disk: " + std::strerror(err));
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
  if (manifest_.tag.kind != kind)
    throw Error((dir_ / manifest_name).string() + ": this directory is " +
                (manifest_.tag.kind == "out" ? "an output directory (--out)" : "a " + manifest_.tag.kind) + " of gradscope " +
                manifest_.tag.program + ", not a " + kind);
}

std::string VerifiedDirectory::read(const std::string& relative, std::size_t max_bytes) const {
  const fs::path path = dir_ / relative;
  const auto listed = manifest_.files.find(relative);
  if (listed == manifest_.files.end()) throw Error(path.string() + " is not listed in " + (dir_ / manifest_name).string());
  std::string bytes = read_file(path, max_bytes);
  if (const std::string sha = sha256_hex(bytes); sha != listed->second)
    throw Error(path.string() + ": its SHA-256 is " + sha + ", the manifest says " + listed->second +
                " (the file was changed or corrupted after it was written)");
  return bytes;
}

void VerifiedDirectory::refuse_unlisted_files() const {
  if (const std::string name = first_unlisted_file(dir_, manifest_); !name.empty())
    throw Error((dir_ / name).string() + " is not listed in " + (dir_ / manifest_name).string() + ": gradscope " +
                manifest_.tag.program + " did not write it");
}

}  // namespace gs::nn
