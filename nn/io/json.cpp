#include "nn/io/json.hpp"

#include <climits>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/error.hpp"
#include "nn/io/atomic_file.hpp"

namespace gs::nn {

using nlohmann::json;

namespace {

// A value as error messages quote it: JSON text (escaped, so one line), cut at 40 characters.
std::string shown(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

// A member's path as messages print it: train.lr, or p["x.w"] for a key that is not a plain name.
std::string join(const std::string& path, const std::string& key) {
  const bool plain = !key.empty() && key.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                           "0123456789_-") == std::string::npos;
  if (!plain) return path + "[" + shown(key) + "]";
  return path.empty() ? key : path + "." + key;
}

}  // namespace

json parse_json(std::string_view text, const std::string& file) {
  std::vector<std::set<std::string>> keys;  // of each open container (an array's stays empty)
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      // depth: the containers open around this one
      if (depth >= static_cast<int>(json_max_depth))
        throw Error(file + ": invalid JSON: nesting deeper than " + std::to_string(json_max_depth) + " levels");
      keys.emplace_back();
    } else if (event == E::object_end || event == E::array_end) {
      keys.pop_back();
    } else if (event == E::key && !keys.back().insert(parsed.get<std::string>()).second) {
      throw Error(file + ": invalid JSON: duplicate key " + shown(parsed) + (depth == 1 ? " at the top level" : ""));
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& e) {  // "[json.exception.parse_error.101] " before what a user needs
    const std::string what = e.what();
    throw Error(file + ": invalid JSON: " + what.substr(what.find("] ") == std::string::npos ? 0 : what.find("] ") + 2));
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
  if (!value_->contains(key)) throw Error(file_ + ": no member " + join(path_, key));
  return JsonField(value_->at(key), file_, join(path_, key));
}

JsonField JsonField::at(std::size_t index) const {
  if (!value_->is_array()) fail("is " + shown(*value_) + ", expected an array");
  if (index >= value_->size())
    fail("has " + std::to_string(value_->size()) + " elements, no element " + std::to_string(index));
  return JsonField((*value_)[index], file_, path_ + "[" + std::to_string(index) + "]");
}

std::size_t JsonField::size() const {
  if (!value_->is_structured()) fail("is " + shown(*value_) + ", expected an array or object");
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
