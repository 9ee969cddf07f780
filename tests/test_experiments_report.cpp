// The reporting helpers the experiment binaries share: statistics over seeds, tables, plots.
#include <filesystem>
#include <fstream>

#include "check.hpp"
#include "experiments/lib/report.hpp"

namespace test_experiments_report {  // one namespace per test file: the files compile in groups

using namespace gs::experiments;

TEST_CASE("stat_of gives the mean and the sample standard deviation", "[report]") {
  const Stat s = stat_of({1.0, 2.0, 4.0});
  REQUIRE(s.n == 3);
  REQUIRE(s.mean == Approx(7.0 / 3.0));
  // sum of squared deviations: (4/3)^2 + (1/3)^2 + (5/3)^2 = 42/9, over n - 1 = 2
  REQUIRE(s.std == Approx(std::sqrt(42.0 / 9.0 / 2.0)));
  REQUIRE(stat_of({5.0}).std == 0.0);
  REQUIRE(fmt(stat_of({5.0})) == "5");
  REQUIRE(fmt(stat_of({1.0, 3.0})) == "2 ± 1.4");
}

TEST_CASE("a table aligns its columns and writes the same cells as CSV", "[report]") {
  Table t({"placement", "loss"});
  t.add_row({"pre", "1.25"});
  t.add_row({"post", "2 ± 0.1"});
  REQUIRE(t.to_text() == "placement  loss\n---------  -------\npre        1.25\npost       2 ± 0.1\n");
  REQUIRE_THROWS_WITH(t.add_row({"only one"}), Catch::Contains("1 cells for 2 columns"));
  const auto dir = std::filesystem::temp_directory_path() / "gradscope_test_report";
  std::filesystem::create_directories(dir);
  t.write_csv(dir / "t.csv");
  std::ifstream in(dir / "t.csv");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(text == "placement,loss\npre,1.25\npost,2 ± 0.1\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("draw writes the data, the gnuplot script, a PNG and an SVG", "[report][plot]") {
  const auto dir = std::filesystem::temp_directory_path() / "gradscope_test_plot";
  std::filesystem::remove_all(dir);
  Plot plot{"a test", "x", "y", false, true, {{"squares", {1, 2, 3}, {1, 4, 9}, {}}, {"with err", {1, 2}, {2, 3}, {0.5, 0.5}}}};
  draw(plot, dir, "p");
  for (const char* f : {"p.dat", "p.gp", "p.png", "p.svg"}) {
    INFO(f);
    REQUIRE(std::filesystem::file_size(dir / f) > 0);
  }
  REQUIRE_FALSE(std::filesystem::exists(dir / "p.png.tmp"));
  REQUIRE_FALSE(std::filesystem::exists(dir / "p.gp.run"));
  // The saved script redraws the final files, not the temporary ones.
  std::ifstream gp(dir / "p.gp");
  const std::string script((std::istreambuf_iterator<char>(gp)), std::istreambuf_iterator<char>());
  REQUIRE(script.find("set output \"p.png\"") != std::string::npos);
  REQUIRE(script.find(".tmp") == std::string::npos);
  std::ifstream png(dir / "p.png", std::ios::binary);
  char magic[4] = {};
  png.read(magic, 4);
  REQUIRE(std::string(magic + 1, 3) == "PNG");
  std::filesystem::remove_all(dir);
}

}  // namespace test_experiments_report
