// A seeded fuzz test of the readers: the checkpoint loader, config.json (and the JSON parser under
// it), and the .npy reader. Every corrupted input must give a gs::Error (or, where the corruption
// changed nothing that matters, load) and never a crash, a hang or another exception; a refused load
// leaves the model as it was. The same seed gives the same inputs on every run; each case's mutation is
// named in the failure message. Also run under the asan preset (AddressSanitizer, UBSan).
//
// Per run (see the counts in each TEST_CASE): 400 raw corruptions of the files of a checkpoint (the
// checksum layer), 300 changes of config.json's values behind a resealed manifest (the validation
// layer), 300 text corruptions of config.json behind a resealed manifest (the parser, through the
// loader), 500 corruptions of .npy bytes and 500 of JSON texts fed to the readers directly.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "check.hpp"
#include "io_helpers.hpp"
#include "nn/io/checkpoint.hpp"
#include "nn/io/json.hpp"
#include "nn/io/npy.hpp"
#include "nn/transformer_lm.hpp"

namespace test_io_fuzz {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t fuzz_seed = 20240601;

std::size_t below(std::mt19937_64& rng, std::size_t n) { return n == 0 ? 0 : rng() % n; }

// Pieces that parsers find hard, to insert among random bytes.
const std::vector<std::string> nasty = {
    "[", "{", "]", "}", "\"", "\\", ",", ":", "nan", "NaN", "Infinity", "-", "+", "1e999", "-1", "0x10", "2.5",
    "18446744073709551616", "99999999999999999999999999", "null", "true", "\"\\ud800\"", "\xff", "\xc3", "\0",
    "(", ")", "'", "False", "True", "(4294967296, 4294967296)", "'descr'", "'<i8'", "\x93NUMPY", "\n", " "};

// One random corruption of `bytes`; `what` says which.
std::string corrupt(std::string bytes, std::mt19937_64& rng, std::string& what) {
  const std::size_t n = bytes.size(), at = below(rng, n + 1);
  switch (below(rng, 5)) {
    case 0:
      what = "truncated to " + std::to_string(at) + " bytes";
      bytes.resize(std::min(at, n == 0 ? 0 : n - 1));
      break;
    case 1: {
      const std::size_t i = below(rng, n);
      const auto x = static_cast<unsigned char>(1 + below(rng, 255));
      what = "byte " + std::to_string(i) + " xor " + std::to_string(x);
      if (n) bytes[i] = static_cast<char>(static_cast<unsigned char>(bytes[i]) ^ x);
      break;
    }
    case 2: {
      std::string piece = below(rng, 2) ? nasty[below(rng, nasty.size())] : std::string(1 + below(rng, 8), '\0');
      if (piece.find('\0') == 0 && piece.size() > 1)
        for (char& c : piece) c = static_cast<char>(rng());
      what = "inserted " + json(piece).dump(-1, ' ', true, json::error_handler_t::replace) + " at " + std::to_string(at);
      bytes.insert(at, piece);
      break;
    }
    case 3: {
      const std::size_t len = 1 + below(rng, 16);
      what = "deleted " + std::to_string(len) + " bytes at " + std::to_string(at);
      if (at < n) bytes.erase(at, len);
      else bytes.pop_back();
      break;
    }
    default: {
      const std::size_t from = below(rng, n), len = 1 + below(rng, 32);
      what = "copied " + std::to_string(len) + " bytes from " + std::to_string(from) + " to " + std::to_string(at);
      bytes.insert(at, bytes.substr(from, len));
    }
  }
  return bytes;
}

// Values that a config.json member must not take (or may, harmlessly: a check decides, not a crash).
json evil_value(std::mt19937_64& rng) {
  json deep = 1;
  switch (below(rng, 16)) {
    case 0: return 1e30;
    case 1: return -1;
    case 2: return 2.5;
    case 3: return 18446744073709551615u;
    case 4: return 9223372036854775808u;
    case 5: return -0.0;
    case 6: return "5";
    case 7: return true;
    case 8: return nullptr;
    case 9: return json::array();
    case 10: return json::object();
    case 11: return 1.7976931348623157e308;
    case 12: return std::string(100000, 'x');
    case 13:
      for (int d = 0; d < 40 + static_cast<int>(below(rng, 40)); ++d) deep = json::array({deep});
      return deep;
    case 14: return json::array({4294967296u, 4294967296u});
    default: return 0;
  }
}

// The document's members, containers and leaves, as JSON pointers.
std::vector<json::json_pointer> members(const json& doc) {
  std::vector<json::json_pointer> out;
  const json flat = doc.flatten();  // a named value: items() refers into it
  for (const auto& [key, value] : flat.items()) {
    json::json_pointer p(key);
    for (; !p.empty(); p = p.parent_pointer()) out.push_back(p);
  }
  return out;
}

ModelConfig with_seed(ModelConfig c, unsigned seed) {
  c.seed = seed;
  return c;
}

// A checkpoint of a tiny model with AdamW state, and its files' bytes, to restore after each case.
struct Fixture {
  test::TempDir tmp{"fuzz"};
  fs::path dir = tmp.path / "ck";
  ModelConfig config = test::saved_config();
  TransformerLM target{with_seed(config, 99)};  // other weights, overwritten by a load
  std::vector<Array> initial;
  std::map<std::string, std::string> original;  // relative name -> bytes

  Fixture() {
    const test::TinyRun run(config.seed);
    const json train = {{"lr", 0.01}, {"data", "markov"}, {"batch", 1}};
    save_checkpoint(dir, "fuzz", run.model, config, 1, &run.adam, &train);
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) original[e.path().lexically_relative(dir).generic_string()] = read_file(e.path());
    for (const NamedParameter& p : target.named_parameters()) initial.push_back(p.parameter.value());
  }
  // Puts back a file a case changed, and the manifest (which a reseal rewrites). Only those: each
  // rewrite of a file costs a flush to the disk on ext4.
  void restore(const std::string& changed) {
    test::overwrite(dir / changed, original[changed]);
    if (changed != manifest_name) test::overwrite(dir / manifest_name, original[manifest_name]);
  }
  bool target_untouched() {
    const auto params = target.named_parameters();
    for (std::size_t i = 0; i < params.size(); ++i)
      if (!test::same_bits(params[i].parameter.value(), initial[i])) return false;
    return true;
  }
  void reset_target() {
    auto params = target.named_parameters();
    for (std::size_t i = 0; i < params.size(); ++i) params[i].parameter.value() = initial[i];
  }
  // Loads into the target; true if refused with a gs::Error (and the target left as it was).
  bool refused(const std::string& what) {
    INFO(what);
    Adam adam(target.named_parameters(), adamw_options(0.01));
    try {
      load_checkpoint(dir, target, config, &adam);
    } catch (const Error& e) {
      INFO(e.what());
      REQUIRE(std::string(e.what()).find('\n') == std::string::npos);  // one line
      REQUIRE(target_untouched());
      return true;
    } catch (const std::exception& e) {
      FAIL("not a gs::Error: " << e.what());
    }
    reset_target();
    return false;
  }
};

}  // namespace

TEST_CASE("fuzz: corrupted checkpoint files are refused by their checksums or their readers", "[io][fuzz]") {
  Fixture f;
  std::mt19937_64 rng(fuzz_seed);
  std::vector<std::string> names;
  for (const auto& [name, bytes] : f.original) names.push_back(name);
  std::size_t refused = 0, harmless = 0;
  for (int c = 0; c < 400; ++c) {
    const std::string& name = names[below(rng, names.size())];
    std::string what;
    test::overwrite(f.dir / name, corrupt(f.original[name], rng, what));
    if (f.refused("case " + std::to_string(c) + ": " + name + " " + what)) ++refused;
    else ++harmless;  // only the manifest can change harmlessly (its whitespace, say): it carries no checksum
    f.restore(name);
  }
  std::printf("fuzz: %zu checkpoint file corruptions refused, %zu harmless (loaded the same)\n", refused, harmless);
  REQUIRE(refused + harmless == 400);
  REQUIRE(refused > 380);
}

TEST_CASE("fuzz: config.json values changed behind a resealed manifest are checked, never cast", "[io][fuzz]") {
  Fixture f;
  std::mt19937_64 rng(fuzz_seed + 1);
  const json doc = parse_json(f.original["config.json"], "config.json");
  const std::vector<json::json_pointer> paths = members(doc);
  std::size_t refused = 0, loaded = 0;
  for (int c = 0; c < 300; ++c) {
    json bad = doc;
    const json::json_pointer& p = paths[below(rng, paths.size())];
    std::string what;
    std::string text;
    const std::size_t kind = below(rng, 4);
    if (kind == 0) {
      what = "removed " + p.to_string();
      json& parent = bad[p.parent_pointer()];
      if (parent.is_array()) parent.erase(std::stoul(p.back()));
      else parent.erase(p.back());
      text = bad.dump(2);
    } else if (kind == 3) {  // a member given twice: the second copy of a top-level member line
      text = doc.dump(2);
      const std::size_t line = text.find("\n  \"", below(rng, text.size()));
      const std::size_t start = line == std::string::npos ? text.find("\n  \"") : line;
      const std::size_t end = text.find('\n', start + 1);
      what = "duplicated line " + text.substr(start + 1, end - start - 1);
      text.insert(start, text.substr(start, end - start));
    } else {
      const json value = evil_value(rng);
      what = "set " + p.to_string() + " to " + value.dump().substr(0, 60);
      bad[p] = value;
      text = bad.dump(2);
    }
    test::overwrite(f.dir / "config.json", text);
    test::reseal(f.dir);
    if (f.refused("case " + std::to_string(c) + ": " + what)) ++refused;
    else ++loaded;  // e.g. a new seed, or "train" changed: nothing that the load checks
    f.restore("config.json");
  }
  std::printf("fuzz: %zu config.json value changes refused, %zu loaded\n", refused, loaded);
  REQUIRE(refused > 200);
}

TEST_CASE("fuzz: config.json text corrupted behind a resealed manifest", "[io][fuzz]") {
  Fixture f;
  std::mt19937_64 rng(fuzz_seed + 2);
  std::size_t refused = 0, loaded = 0;
  for (int c = 0; c < 300; ++c) {
    std::string what;
    test::overwrite(f.dir / "config.json", corrupt(f.original["config.json"], rng, what));
    test::reseal(f.dir);
    if (f.refused("case " + std::to_string(c) + ": config.json " + what)) ++refused;
    else ++loaded;
    f.restore("config.json");
  }
  std::printf("fuzz: %zu config.json text corruptions refused, %zu loaded\n", refused, loaded);
  REQUIRE(refused > 200);
}

TEST_CASE("fuzz: corrupted .npy bytes give an array or a gs::Error", "[io][fuzz]") {
  std::mt19937_64 rng(fuzz_seed + 3);
  const std::vector<std::string> good = {npy_bytes(test::randn({3, 4}, 1)), npy_bytes(Array(2.5)),
                                         npy_bytes(Array::from_shape({0, 5})), npy_bytes(IndexArray{{1, 2}, {3, 4}})};
  const std::vector<Shape> shapes = {{3, 4}, {}, {0, 5}, {2, 2}};
  std::size_t refused = 0, read = 0;
  for (int c = 0; c < 500; ++c) {
    std::string what;
    const std::size_t which = below(rng, good.size());
    std::string bytes = corrupt(good[which], rng, what);
    if (below(rng, 4) == 0) {  // aim at the header's numbers too
      const std::size_t open = bytes.find('(');
      if (open != std::string::npos) {
        const std::string dims = below(rng, 2) ? "99999999999999999999" : "4611686018427387904, 4";
        bytes.insert(open + 1, dims + ", ");
        what += ", then shape prefixed by " + dims;
      }
    }
    INFO("case " << c << ": " << what);
    try {
      if (below(rng, 2)) parse_npy_real(bytes, "x.npy", shapes[which]);
      else parse_npy_i8(bytes, "x.npy", shapes[which]);
      ++read;
    } catch (const Error& e) {
      REQUIRE(std::string(e.what()).rfind("x.npy: ", 0) == 0);  // names the file
      ++refused;
    } catch (const std::exception& e) {
      FAIL("not a gs::Error: " << e.what());
    }
  }
  std::printf("fuzz: %zu .npy corruptions refused, %zu read\n", refused, read);
  REQUIRE(refused > 400);
}

TEST_CASE("fuzz: corrupted and hostile JSON texts give a document or a gs::Error", "[io][fuzz]") {
  std::mt19937_64 rng(fuzz_seed + 4);
  const std::string config = json::parse(R"({"vocab": 7, "train": {"lr": 0.01, "list": [1, 2.5, "x", null, true]},
                                              "s": "\u4e2d\n", "parameters": {"a.b": [2, 3]}})").dump(2);
  std::size_t refused = 0, parsed = 0;
  for (int c = 0; c < 500; ++c) {
    std::string what, text;
    switch (below(rng, 4)) {
      case 0: {  // deep nesting, up to far beyond any stack
        const std::size_t depth = 60 + below(rng, 2) * below(rng, 400000);
        what = "nesting " + std::to_string(depth);
        const std::string open = below(rng, 2) ? "[" : "{\"a\": ";
        for (std::size_t i = 0; i < depth; ++i) text += open;
        break;
      }
      case 1: {  // duplicate keys at some depth
        const std::size_t depth = below(rng, 5);
        what = "a duplicate key at depth " + std::to_string(depth);
        for (std::size_t i = 0; i < depth; ++i) text += "{\"k\": ";
        text += "{\"x\": 1, \"x\": 2}";
        text += std::string(depth, '}');
        break;
      }
      case 2: {  // random bytes
        what = "random bytes";
        for (std::size_t i = 0, n = below(rng, 64); i < n; ++i) text += nasty[below(rng, nasty.size())];
        break;
      }
      default:
        text = corrupt(config, rng, what);
    }
    INFO("case " << c << ": " << what);
    try {
      const json j = parse_json(text, "f.json");
      ++parsed;
      (void)j.dump();  // what was parsed can be written again
    } catch (const Error& e) {
      REQUIRE(std::string(e.what()).rfind("f.json: ", 0) == 0);
      REQUIRE(std::string(e.what()).find('\n') == std::string::npos);
      ++refused;
    } catch (const std::exception& e) {
      FAIL("not a gs::Error: " << e.what());
    }
  }
  std::printf("fuzz: %zu JSON texts refused, %zu parsed\n", refused, parsed);
  REQUIRE(refused > 350);
}

}  // namespace test_io_fuzz
