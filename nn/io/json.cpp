#include "nn/io/json.hpp"

#include <climits>
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

// nlohmann's SAX interface, building the document as nlohmann's own parser does (a stack of the open
// containers), plus what that parser lets through: duplicate keys and unbounded nesting. nlohmann's
// parser itself is a loop, not a recursion, so no input overflows the stack.
class StrictBuilder final : public nlohmann::json_sax<json> {
 public:
  explicit StrictBuilder(json& root) : root_(root) {}
  const std::string& error() const { return error_; }

  bool null() override { return add(nullptr); }
  bool boolean(bool value) override { return add(value); }
  bool number_integer(number_integer_t value) override { return add(value); }
  bool number_unsigned(number_unsigned_t value) override { return add(value); }
  bool number_float(number_float_t value, const string_t&) override { return add(value); }
  bool string(string_t& value) override { return add(std::move(value)); }
  bool binary(binary_t&) override { return refuse("binary values are not JSON"); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& key) override {
    if (open_.back()->contains(key))
      return refuse("duplicate key " + shown(key) + (paths_.back().empty() ? " at the top level" : " in " + paths_.back()));
    key_ = std::move(key);
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = "invalid JSON: " + without_prefix(e.what());
    if (error_.find(" at line ") == std::string::npos) error_ += " (at byte " + std::to_string(position) + ")";
    return false;
  }

 private:
  bool refuse(const std::string& what) {
    error_ = "invalid JSON: " + what;
    return false;
  }

  // Where the next value goes: the document itself, the end of the open array, or the open object's key.
  json& slot() {
    if (open_.empty()) return root_;
    json& top = *open_.back();
    if (top.is_array()) {
      top.push_back(nullptr);
      return top.back();
    }
    return top[key_];
  }
  std::string next_path() const {
    if (open_.empty()) return "";
    const json& top = *open_.back();
    return top.is_array() ? paths_.back() + "[" + std::to_string(top.size()) + "]" : join(paths_.back(), key_);
  }

  bool add(json&& value) {
    slot() = std::move(value);
    return true;
  }
  bool open(json&& container) {
    const std::string path = next_path();
    if (open_.size() == json_max_depth)
      return refuse("nesting deeper than " + std::to_string(json_max_depth) + " levels" +
                    (path.empty() ? "" : " at " + (path.size() > 60 ? path.substr(0, 57) + "..." : path)));
    json& placed = slot();
    placed = std::move(container);
    open_.push_back(&placed);  // stays valid: its parent grows only after it is closed
    paths_.push_back(path);
    return true;
  }
  bool close() {
    open_.pop_back();
    paths_.pop_back();
    return true;
  }

  json& root_;
  std::vector<json*> open_;         // the containers being filled, innermost last
  std::vector<std::string> paths_;  // their paths, for messages
  std::string key_;                 // the key of the open object's next member
  std::string error_;
};

}  // namespace

json parse_json(std::string_view text, const std::string& file) {
  json root;
  StrictBuilder builder(root);
  if (!json::sax_parse(text.begin(), text.end(), &builder)) throw Error(file + ": " + builder.error());
  return root;
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
