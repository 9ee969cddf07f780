// JSON through nlohmann-json, strictly: what the old hand-written parser let through is refused with an
// error naming the file (and the line, or the member's path), and counts are checked.
#include <nlohmann/json.hpp>

#include "check.hpp"
#include "nn/io/json.hpp"

namespace test_io_json {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;
using nlohmann::json;

TEST_CASE("json: what is not JSON is refused naming the file and the line", "[io][json]") {
  for (const char* text : {"{\"a\": nan}", "{\"a\": NaN}", "{\"a\": Infinity}", "{\"a\": -Infinity}", "{\"a\": +5}",
                           "{\"a\": 0x10}", "{\"a\": 01}", "{'a': 1}", "{\"a\": 1,}", "[1, 2,]", "{\"a\": 1} // note",
                           "", "   ", "{\"a\": \"\x01\"}", "{\"a\": \"\xff\"}", "{\"a\": tru}"}) {
    INFO(text);
    REQUIRE_THROWS_WITH(parse_json(text, "f.json"), Catch::StartsWith("f.json: invalid JSON") &&
                                                        (Catch::Contains("line ") || Catch::Contains("byte ")));
  }
  REQUIRE_THROWS_WITH(parse_json("{\"a\": 1}\n x", "f.json"),
                      Catch::Contains("f.json: invalid JSON") && Catch::Contains("line 2, column 2") &&
                          Catch::Contains("end of input"));
  REQUIRE_THROWS_WITH(parse_json("{\"a\": 1e400}", "f.json"), Catch::Contains("f.json") && Catch::Contains("overflow"));
}

TEST_CASE("json: a duplicate key is refused, naming the key", "[io][json]") {
  REQUIRE_THROWS_WITH(parse_json("{\"a\": 1, \"a\": 2}", "f.json"),
                      Catch::Contains("f.json: invalid JSON: duplicate key \"a\" at the top level"));
  REQUIRE_THROWS_WITH(parse_json("{\"train\": {\"lr\": 1, \"lr\": 2}}", "f.json"),
                      Catch::Contains("f.json: invalid JSON: duplicate key \"lr\""));
  REQUIRE_THROWS_WITH(parse_json("{\"p\": {\"x.w\": [{\"k\": 1, \"k\": 1}]}}", "f.json"),
                      Catch::Contains("f.json: invalid JSON: duplicate key \"k\""));
  REQUIRE_NOTHROW(parse_json("[{\"a\": 1}, {\"a\": 2}]", "f.json"));  // the same key in two objects is fine
}

TEST_CASE("json: nesting is bounded, so 2,000,000 opening brackets are an error, not a stack overflow", "[io][json]") {
  const std::string deep(2'000'000, '[');
  REQUIRE_THROWS_WITH(parse_json(deep, "config.json"),
                      Catch::Contains("config.json: invalid JSON: nesting deeper than 64 levels"));
  std::string ok;
  for (std::size_t i = 0; i < json_max_depth; ++i) ok += "{\"a\":[";
  ok += "1";
  for (std::size_t i = 0; i < json_max_depth; ++i) ok += "]}";
  REQUIRE_THROWS_WITH(parse_json(ok, "f.json"), Catch::Contains("f.json: invalid JSON: nesting deeper than 64 levels"));
  std::string just(json_max_depth, '[');
  just += std::string(json_max_depth, ']');
  REQUIRE_NOTHROW(parse_json(just, "f.json"));
}

TEST_CASE("json: strings decode to UTF-8, escapes included", "[io][json]") {
  const json j = parse_json(R"({"zh": "\u4e2d", "pair": "\ud83d\ude00", "raw": "中", "esc": "a\"b\\c\n"})", "f.json");
  REQUIRE(j["zh"] == "\xe4\xb8\xad");  // one character, three bytes (the old parser kept one wrong byte)
  REQUIRE(j["raw"] == "\xe4\xb8\xad");
  REQUIRE(j["pair"] == "\xf0\x9f\x98\x80");
  REQUIRE(j["esc"] == "a\"b\\c\n");
  // What is written reads back the same: doubles to the bit, integers as integers.
  const json values = {{"x", 0.1}, {"tiny", 5e-324}, {"big", 1.7976931348623157e308}, {"n", 18446744073709551615u},
                       {"s", "\u4e2d\n"}};
  const json back = parse_json(values.dump(2), "f.json");
  REQUIRE(back == values);
  REQUIRE(back["tiny"].get<double>() == 5e-324);
  REQUIRE(back["n"].is_number_unsigned());
}

TEST_CASE("json: nlohmann's errors name the member's path (JSON_DIAGNOSTICS), turned into one line naming the file",
          "[io][json]") {
  const json doc = parse_json(R"({"train": {"lr": 0.01, "list": [1, "x"]}, "five": 5, "half": 2.5, "neg": -1})", "ck/config.json");
  const auto error_of = [&](auto read) -> std::string {
    try {
      read();
    } catch (const json::exception& e) {
      return json_error("ck/config.json", e);
    }
    return "";
  };
  REQUIRE(error_of([&] { (void)doc.at("train").at("list").at(1).get<double>(); }) ==
          "ck/config.json: (/train/list/1) type must be number, but is string");
  REQUIRE(error_of([&] { (void)doc.at("train").at("momentum"); }) == "ck/config.json: (/train) key 'momentum' not found");
  // A count is an integer as JSON writes it, in its range: nlohmann's get<std::size_t> would cast.
  REQUIRE(json_count(doc.at("five"), "five", 0, 5, "f.json") == 5);
  REQUIRE_THROWS_WITH(json_count(doc.at("five"), "five", 0, 4, "f.json"),
                      Catch::Equals("f.json: five is 5, expected an integer from 0 to 4"));
  REQUIRE_THROWS_WITH(json_count(doc.at("half"), "half", 0, 9, "f.json"), Catch::Contains("half is 2.5"));
  REQUIRE_THROWS_WITH(json_count(doc.at("neg"), "neg", 0, 9, "f.json"), Catch::Contains("neg is -1"));
  REQUIRE_THROWS_WITH(json_count(doc.at("train"), "train", 0, 9, "f.json"), Catch::Contains("train is {\"list\""));
}

TEST_CASE("json: the model config reads back, and bad values name the member", "[io][json]") {
  const ModelConfig c{.vocab = 11, .context = 7, .d_model = 12, .heads = 3, .layers = 4, .placement = Placement::peri,
                      .init = Init::gpt2, .seed = 4000000000u};
  const json doc = parse_json(model_config_json(c).dump(), "c.json");
  const ModelConfig back = model_config_from_json(doc, "c.json");
  REQUIRE(architecture_difference(back, c).empty());
  REQUIRE(back.ff() == 48);
  REQUIRE(back.init == Init::gpt2);
  REQUIRE(back.seed == 4000000000u);
  // The order of the members as written: the model's shape first, the seed last.
  REQUIRE(model_config_json(c).dump().rfind("{\"vocab\":11,\"context\":7,\"d_model\":12", 0) == 0);

  auto refused = [&](const std::string& key, const json& value, const std::string& what) {
    json bad = doc;
    bad[key] = value;
    INFO(bad.dump());
    REQUIRE_THROWS_WITH(model_config_from_json(bad, "c.json"), Catch::Contains("c.json: " + what));
  };
  refused("layers", 1e30, "layers is 1e+30, expected an integer from 1 to 2147483648");
  refused("layers", -1, "layers is -1");
  refused("heads", 2.5, "heads is 2.5");
  refused("vocab", 0, "vocab is 0, expected an integer from 1 to 2147483648");
  refused("seed", 4294967296u, "seed is 4294967296, expected an integer from 0 to 4294967295");
  refused("placement", "sideways", "placement is not a placement");
  refused("placement", 3, "(/placement) type must be string, but is number");
  refused("init", "zeros", "init is not an initialisation");
  json missing = doc;
  missing.erase("d_model");
  REQUIRE_THROWS_WITH(model_config_from_json(missing, "c.json"), Catch::Equals("c.json: key 'd_model' not found"));
}

}  // namespace test_io_json
