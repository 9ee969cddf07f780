// The flags' own reading of values (experiments/lib/flags.hpp), where it differs from CLI11's.
#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "experiments/lib/flags.hpp"

namespace test_flags {  // one namespace per test file: the files compile in groups

using namespace gs::experiments;

TEST_CASE("a real flag holds the double its text names (CLI11 alone rounds some texts twice)", "[flags]") {
  // CLI11 reads "4.91e-6" with strtold and rounds the long double to double: 1 ulp off the nearest
  // double, which the compiler's literal 4.91e-6 is. Without that difference this test would show nothing.
  REQUIRE(static_cast<double>(std::strtold("4.91e-6", nullptr)) != 4.91e-6);

  CLI::App app("train");
  double lr = 0.01;
  std::vector<double> lrs;
  add_flag(app, "--lr", lr, "the learning rate", RealRange::above(0));
  add_flag(app, "--lrs", lrs, "learning rates", RealRange::above(0));
  finish_cli(app);
  app.parse(std::vector<std::string>{"4.91e-6,1e-2", "--lrs", "4.91e-6", "--lr"});  // CLI11 takes them last first
  CHECK(lr == 4.91e-6);
  CHECK(lrs == std::vector<double>{4.91e-6, 1e-2});
}

TEST_CASE("a whole number is digits only, each element of a list checked; --help and describe() state the range",
          "[flags]") {
  CLI::App app("grid");
  std::size_t steps = 10;
  std::vector<std::size_t> depths = {2, 4};
  add_flag(app, "--steps", steps, "training steps", Whole{1, 1000});
  add_flag(app, "--depths", depths, "depths", Whole{1});
  finish_cli(app);
  auto refusal = [&](std::vector<std::string> args) -> std::string {
    try {
      app.parse(args);
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(refusal({"-5", "--steps"}) == "--steps: '-5' is not a whole number in [1, 1000]");  // not 2^64 - 5
  CHECK(refusal({"2000", "--steps"}) == "--steps: '2000' is too large for a whole number in [1, 1000]");
  CHECK(refusal({"4,+2", "--depths"}) == "--depths: '+2' is not a whole number >= 1");
  CHECK(refusal({"4,8", "--depths", "7", "--steps"}).empty());
  CHECK(steps == 7);
  CHECK(depths == std::vector<std::size_t>{4, 8});

  CHECK(app.get_option("--steps")->get_description() == "training steps [a whole number in [1, 1000]]");
  describe(app, "--steps", "steps to train");
  CHECK(app.get_option("--steps")->get_description() == "steps to train [a whole number in [1, 1000]]");
}

TEST_CASE("a placement flag takes nn's presets and triples, by their own names", "[flags]") {
  CLI::App app("train");
  std::string placement = "pre";
  std::vector<std::string> placements;
  add_flag(app, "--placement", placement, "placement", gs::experiments::placement());
  add_flag(app, "--placements", placements, "placements", gs::experiments::placement());
  finish_cli(app);
  app.parse(std::vector<std::string>{"post,pre/layer/none", "--placements", "sandwich", "--placement"});
  CHECK(placement == "peri");
  CHECK(placements == std::vector<std::string>{"post", "pre"});
  CHECK_THROWS_AS(app.parse(std::vector<std::string>{"sideways", "--placement"}), CLI::ValidationError);
}

}  // namespace test_flags
