#include "nn/io/json.hpp"

#include <climits>
#include <set>
#include <nlohmann/json.hpp>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::nn {

using nlohmann::json;

namespace {

// A path segment as error messages print it: bare if it is a plain name, else as a quoted key.
std::string segment(const std::string& key) {
  const bool plain = !key.empty() && key.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                           "0123456789_-") == std::string::npos;
  if (plain) return key;
  std::string quoted = "[";  // appended piece by piece: g++ 12 warns falsely (-Wrestrict) on "[" + s + "]"
  quoted += json(key).dump(-1, ' ', false, json::error_handler_t::replace);
  quoted += ']';
  return quoted;
}

std::string join(const std::string& path, const std::string& key) {
  const std::string s = segment(key);
  return path.empty() || s.front() == '[' ? path + s : path + "." + s;
}

// A value as error messages quote it: JSON text (escaped, so one line), cut at 40 characters.
std::string shown(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; the rest is what a user needs.
std::string without_prefix(const std::string& what) {
  const std::size_t end = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? what.substr(end + 2) : what;
}

// What the callback tracks of each open container: its path (for messages), and an object's keys so
// far or an array's element count.
struct Open {
  std::string path;
  bool array;
  std::size_t count = 0;
  std::set<std::string> keys;
  std::string key;  // an object's current key
};

}  // namespace

json parse_json(std::string_view text, const std::string& file) {
  std::vector<Open> open;
  auto refuse = [&](const std::string& what) -> bool { throw Error(file + ": invalid JSON: " + what); };
  auto next_path = [&] {  // the path of the value that comes next
    if (open.empty()) return std::string();
    Open& top = open.back();
    return top.array ? top.path + "[" + std::to_string(top.count++) + "]" : join(top.path, top.key);
  };
  const json::parser_callback_t check = [&](int, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      const std::string path = next_path();
      if (open.size() == json_max_depth)
        refuse("nesting deeper than " + std::to_string(json_max_depth) + " levels" +
               (path.empty() ? "" : " at " + (path.size() > 60 ? path.substr(0, 57) + "..." : path)));
      open.push_back(Open{path, event == E::array_start, 0, {}, {}});
    } else if (event == E::object_end || event == E::array_end) {
      open.pop_back();
    } else if (event == E::key) {
      Open& top = open.back();
      top.key = parsed.get<std::string>();
      if (!top.keys.insert(top.key).second)
        refuse("duplicate key " + shown(parsed) + (top.path.empty() ? " at the top level" : " in " + top.path));
    } else if (!open.empty() && open.back().array) {
      ++open.back().count;  // a value in an array
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& e) {
    throw Error(file + ": invalid JSON: " + without_prefix(e.what()));
  }
}

json read_json_file(const std::filesystem::path& path, std::size_t max_bytes) {
  return parse_json(read_file(path, max_bytes), path.string());
}

// ---- JsonField ----

JsonField::JsonField(const nlohmann::json& value, std::string file, std::string path)
    : value_(&value), file_(std::move(file)), path_(std::move(path)) {}

void JsonField::fail(const std::string& what) const {
  throw Error(file_ + ": " + (path_.empty() ? "the document" : path_) + " " + what);
}

bool JsonField::is_object() const { return value_->is_object(); }

bool JsonField::has(const std::string& key) const { return value_->is_object() && value_->contains(key); }

JsonField JsonField::at(const std::string& key) const {
  if (!value_->is_object()) fail("is " + shown(*value_) + ", expected an object with a member " + shown(key));
  const auto it = value_->find(key);
  if (it == value_->end()) throw Error(file_ + ": no member " + join(path_, key));
  return JsonField(*it, file_, join(path_, key));
}

JsonField JsonField::at(std::size_t index) const {
  if (!value_->is_array()) fail("is " + shown(*value_) + ", expected an array");
  if (index >= value_->size())
    fail("has " + std::to_string(value_->size()) + " elements, no element " + std::to_string(index));
  return JsonField((*value_)[index], file_, path_ + "[" + std::to_string(index) + "]");
}

std::size_t JsonField::size() const {
  if (!value_->is_array() && !value_->is_object()) fail("is " + shown(*value_) + ", expected an array or object");
  return value_->size();
}

std::vector<std::string> JsonField::keys() const {
  if (!value_->is_object()) fail("is " + shown(*value_) + ", expected an object");
  std::vector<std::string> out;
  for (const auto& item : value_->items()) out.push_back(item.key());
  return out;
}

std::size_t JsonField::as_size(std::size_t max) const { return as_size_in(0, max); }

std::size_t JsonField::as_size_in(std::size_t min, std::size_t max) const {
  // Only integers as JSON writes them: 5, not 5.0, 5e0 or "5". The parser stores a number without a
  // minus sign as unsigned; a document built in code may hold a signed one, checked for >= 0 first.
  const bool is_integer = value_->is_number_unsigned() || (value_->is_number_integer() && value_->get<std::int64_t>() >= 0);
  if (!is_integer || value_->get<std::uint64_t>() < min || value_->get<std::uint64_t>() > max)
    fail("is " + shown(*value_) + ", expected an integer from " + std::to_string(min) + " to " + std::to_string(max));
  return static_cast<std::size_t>(value_->get<std::uint64_t>());
}

unsigned JsonField::as_unsigned() const { return static_cast<unsigned>(as_size(UINT_MAX)); }

double JsonField::as_double() const {
  if (!value_->is_number()) fail("is " + shown(*value_) + ", expected a number");
  return value_->get<double>();
}

bool JsonField::as_bool() const {
  if (!value_->is_boolean()) fail("is " + shown(*value_) + ", expected true or false");
  return value_->get<bool>();
}

const std::string& JsonField::as_string() const {
  if (!value_->is_string()) fail("is " + shown(*value_) + ", expected a string");
  return value_->get_ref<const std::string&>();
}

}  // namespace gs::nn
