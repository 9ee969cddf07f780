// JSON through nlohmann-json, strictly: what the old hand-written parser let through is refused with an
// error naming the file (and the line, or the member), and member conversions are checked.
#include <nlohmann/json.hpp>

#include "check.hpp"
#include "nn/io/config_json.hpp"
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

TEST_CASE("json: member conversions are checked and name the file and the member", "[io][json]") {
  const json doc = parse_json(R"({"layers": 1e30, "neg": -1, "half": 2.5, "text": "5", "five": 5, "flag": true,
                                  "train": {"lr": 0.01, "list": [1, "x"]}})",
                              "ck/config.json");
  const JsonField root(doc, "ck/config.json");
  REQUIRE_THROWS_WITH(root.at("layers").as_size(),
                      Catch::Equals("ck/config.json: layers is 1e+30, expected an integer from 0 to 18446744073709551615"));
  REQUIRE_THROWS_WITH(root.at("neg").as_size(), Catch::Contains("ck/config.json: neg is -1, expected an integer"));
  REQUIRE_THROWS_WITH(root.at("half").as_size(), Catch::Contains("half is 2.5"));
  REQUIRE_THROWS_WITH(root.at("text").as_size(), Catch::Contains("text is \"5\""));
  REQUIRE_THROWS_WITH(root.at("five").as_size(4), Catch::Contains("five is 5, expected an integer from 0 to 4"));
  REQUIRE(root.at("five").as_size() == 5);
  REQUIRE(root.at("five").as_unsigned() == 5u);
  REQUIRE(root.at("five").as_double() == 5.0);
  REQUIRE(root.at("flag").as_bool());
  REQUIRE_THROWS_WITH(root.at("flag").as_double(), Catch::Contains("flag is true, expected a number"));
  REQUIRE(root.at("train").at("lr").as_double() == 0.01);
  REQUIRE_THROWS_WITH(root.at("train").at("list").at(1).as_double(), Catch::Contains("train.list[1] is \"x\""));
  REQUIRE_THROWS_WITH(root.at("train").at("list").at(2), Catch::Contains("train.list has 2 elements, no element 2"));
  REQUIRE_THROWS_WITH(root.at("train").at("momentum"), Catch::Equals("ck/config.json: no member train.momentum"));
  REQUIRE_THROWS_WITH(root.at("five").at("x"), Catch::Contains("five is 5, expected an object"));
  REQUIRE(root.at("train").keys() == std::vector<std::string>{"list", "lr"});
}

TEST_CASE("json: the model config reads back, and bad values name the member", "[io][json]") {
  const ModelConfig c{.vocab = 11, .context = 7, .d_model = 12, .heads = 3, .layers = 4, .placement = Placement::peri,
                      .init = Init::gpt2, .seed = 4000000000u};
  const json doc = parse_json(model_config_json(c).dump(), "c.json");
  const ModelConfig back = model_config_from_json(JsonField(doc, "c.json"));
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
    REQUIRE_THROWS_WITH(model_config_from_json(JsonField(bad, "c.json")), Catch::Contains("c.json: " + what));
  };
  refused("layers", 1e30, "layers is 1e+30, expected an integer from 1 to 2147483648");
  refused("layers", -1, "layers is -1");
  refused("heads", 2.5, "heads is 2.5");
  refused("vocab", 0, "vocab is 0, expected an integer from 1 to 2147483648");
  refused("seed", 4294967296u, "seed is 4294967296, expected an integer from 0 to 4294967295");
  refused("placement", "sideways", "placement is not a placement");
  refused("init", "zeros", "init is not an initialisation");
  json missing = doc;
  missing.erase("d_model");
  REQUIRE_THROWS_WITH(model_config_from_json(JsonField(missing, "c.json")), Catch::Contains("no member d_model"));
}

}  // namespace test_io_json
