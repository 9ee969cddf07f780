#include "nn/io/ownership.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"
#include "nn/io/json.hpp"

namespace gs::nn {

namespace fs = std::filesystem;

bool valid_relative(const std::string& name) {
  if (name.empty() || name.front() == '/' || name.back() == '/' || name.find("//") != std::string::npos) return false;
  for (const fs::path& part : fs::path(name))
    if (part == "." || part == "..") return false;
  return true;
}

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
  Manifest m;
  try {
    if (doc.at("written_by") != "gradscope") throw Error(file + ": written_by is not \"gradscope\"");
    m.tag = {doc.at("program").get<std::string>(), doc.at("kind").get<std::string>()};
    if (!doc.contains("files")) return m;
    m.lists_files = true;
    for (const auto& [name, sha] : doc.at("files").get<std::map<std::string, std::string>>()) {
      if (!valid_relative(name) || name == manifest_name) throw Error(file + ": files." + name + " is not a file name inside the directory");
      if (sha.size() != 64 || sha.find_first_not_of("0123456789abcdef") != std::string::npos)
        throw Error(file + ": files." + name + " is not a SHA-256 (64 hex digits)");
      m.files[name] = sha;
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(json_error(file, e));
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
  if (m.tag.program != tag.program || m.tag.kind != tag.kind) return "holds " + describe(m.tag) + ", not " + describe(tag);
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
  return ec ? "(an entry that cannot be read: " + ec.message() + ")" : "";
}

void check_creatable(const fs::path& path, std::string_view flag) {
  fs::path p = path.lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  fs::path child = p, ancestor = p.parent_path();  // the nearest existing ancestor, and its child on the way
  std::error_code ec;
  while (!ancestor.empty() && !fs::exists(fs::symlink_status(ancestor, ec))) {
    child = ancestor;
    ancestor = ancestor.parent_path();
  }
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
    std::string head;
    try {
      head = read_file_head(file, 4096);  // where the marker must be
    } catch (const Error&) {  // unreadable: not provably ours
    }
    if (!overwrite && head.find(output_signature(program)) == std::string::npos)
      refuse_path(flag, file, "exists and was not written by gradscope " + std::string(program) + " (its first 4 KiB lack \"" +
                           output_signature(program) + "\"); not overwriting it: remove it, choose another name, "
                           "or give --overwrite");
  }
  check_creatable(file, flag);
}

}  // namespace gs::nn
