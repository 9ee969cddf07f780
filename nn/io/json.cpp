#include "nn/io/json.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/error.hpp"

namespace gs::nn {

const Json& Json::at(const std::string& key, const std::string& file) const {
  if (!has(key)) throw Error(file + ": no \"" + key + "\" in the JSON object");
  return object.at(key);
}

std::size_t Json::as_size(const std::string& what, const std::string& file) const {
  if (type != Type::number || number < 0 || number != std::floor(number))
    throw Error(file + ": \"" + what + "\" is not a non-negative integer");
  return static_cast<std::size_t>(number);
}

const std::string& Json::as_string(const std::string& what, const std::string& file) const {
  if (type != Type::string) throw Error(file + ": \"" + what + "\" is not a string");
  return string;
}

namespace {

// Recursive descent over the grammar value := object | array | string | number | true | false | null.
struct Parser {
  std::string_view text;
  const std::string& file;
  std::size_t pos = 0;

  [[noreturn]] void error(const std::string& what) const {
    throw Error(file + ": invalid JSON at byte " + std::to_string(pos) + ": " + what);
  }
  void skip_space() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\n' || text[pos] == '\t' || text[pos] == '\r'))
      ++pos;
  }
  bool eat(char c) {
    skip_space();
    if (pos < text.size() && text[pos] == c) return ++pos, true;
    return false;
  }
  void expect(char c) {
    if (!eat(c)) error(std::string("expected '") + c + "'");
  }
  bool eat_word(std::string_view word) {
    if (text.substr(pos, word.size()) != word) return false;
    pos += word.size();
    return true;
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    while (pos < text.size() && text[pos] != '"') {
      char c = text[pos++];
      if (c == '\\') {
        if (pos >= text.size()) error("unterminated escape");
        const char e = text[pos++];
        if (e == 'n') c = '\n';
        else if (e == 't') c = '\t';
        else if (e == 'r') c = '\r';
        else if (e == '"' || e == '\\' || e == '/') c = e;
        else if (e == 'u' && pos + 4 <= text.size()) {  // \u00XX only: what json_quote writes
          c = static_cast<char>(std::strtol(std::string(text.substr(pos, 4)).c_str(), nullptr, 16));
          pos += 4;
        } else error("unsupported escape");
      }
      out += c;
    }
    if (pos >= text.size()) error("unterminated string");
    ++pos;
    return out;
  }

  Json parse_value() {
    skip_space();
    if (pos >= text.size()) error("unexpected end");
    Json v;
    const char c = text[pos];
    if (c == '{') {
      ++pos;
      v.type = Json::Type::object;
      if (eat('}')) return v;
      do {
        skip_space();
        std::string key = parse_string();
        expect(':');
        v.object[key] = parse_value();
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++pos;
      v.type = Json::Type::array;
      if (eat(']')) return v;
      do v.array.push_back(parse_value());
      while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.type = Json::Type::string;
      v.string = parse_string();
    } else if (eat_word("true")) {
      v.type = Json::Type::boolean;
      v.boolean = true;
    } else if (eat_word("false")) {
      v.type = Json::Type::boolean;
    } else if (eat_word("null")) {
      v.type = Json::Type::null;
    } else {
      const std::string rest(text.substr(pos, 64));
      char* end = nullptr;
      v.type = Json::Type::number;
      v.number = std::strtod(rest.c_str(), &end);
      if (end == rest.c_str()) error("expected a value");
      pos += static_cast<std::size_t>(end - rest.c_str());
    }
    return v;
  }
};

}  // namespace

Json parse_json(std::string_view text, const std::string& file) {
  Parser parser{text, file};
  Json value = parser.parse_value();
  parser.skip_space();
  if (parser.pos != text.size()) parser.error("trailing characters");
  return value;
}

std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_object(const JsonMembers& members, int indent) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  std::string out = "{\n";
  for (std::size_t i = 0; i < members.size(); ++i)
    out += pad + "  " + json_quote(members[i].first) + ": " + members[i].second + (i + 1 < members.size() ? ",\n" : "\n");
  return out + pad + "}";
}

}  // namespace gs::nn
