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
  add_flag(app, "--lr", lr, "the learning rate");
  add_flag(app, "--lrs", lrs, "learning rates");
  finish_cli(app);
  app.parse(std::vector<std::string>{"4.91e-6,1e-2", "--lrs", "4.91e-6", "--lr"});  // CLI11 takes them last first
  CHECK(lr == 4.91e-6);
  CHECK(lrs == std::vector<double>{4.91e-6, 1e-2});
  CHECK(flag_value(app, "--lr") == "4.91e-06");  // what a checkpoint records
  CHECK(flag_value(app, "--lrs") == "4.91e-06,0.01");
}

}  // namespace test_flags
