// The grid of the experiment harness (experiments/lib/grid.hpp): cells in order, the last axis
// fastest; shards that partition the cells; results that a shard writes (shard.hpp) and a merge reads
// back bit for bit, NaN and infinities included; and the merges it refuses.
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "check.hpp"
#include "experiments/lib/grid.hpp"
#include "experiments/lib/shard.hpp"
#include "nn/io/atomic_file.hpp"

namespace test_experiments_grid {  // one namespace per test file: the files compile in groups

using namespace gs::experiments;
namespace fs = std::filesystem;

namespace {

Grid small_grid() {
  Grid g;
  g.axis("placement", {"post", "pre"}).axis("lr", labels(std::vector<double>{1e-3, 0.1 + 0.2})).axis("seed", {"0", "1", "2"});
  return g;
}

}  // namespace

TEST_CASE("a grid's cells are every combination, the last axis fastest", "[experiments][grid]") {
  const Grid g = small_grid();
  REQUIRE(g.size() == 12);
  REQUIRE(g.labels(1) == std::vector<std::string>{"0.001", "0.30000000000000004"});  // shortest exact text
  const Cell c{&g, 7};  // (pre, 0.001, seed 1): 7 = 1 * 6 + 0 * 3 + 1
  REQUIRE(c["placement"] == 1);
  REQUIRE(c["lr"] == 0);
  REQUIRE(c["seed"] == 1);
  REQUIRE(g.describe(7) == "pre, lr 0.001, seed 1");
  REQUIRE_THROWS_WITH(Grid().axis("lr", {"1", "1"}), Catch::Contains("twice"));
}

TEST_CASE("cell() is the inverse of position(); seeds_of() gives the seeds of one cell in order", "[experiments][grid]") {
  const Grid g = small_grid();
  for (std::size_t c = 0; c < g.size(); ++c) REQUIRE(g.cell({g.position(c, 0), g.position(c, 1), g.position(c, 2)}) == c);
  REQUIRE_THROWS_WITH(g.cell({1, 0}), Catch::Contains("2 positions for 3 axes"));
  std::vector<int> runs(g.size());
  for (std::size_t c = 0; c < g.size(); ++c) runs[c] = static_cast<int>(c);
  const std::vector<const int*> seeds = seeds_of(runs, g, {1, 1});  // pre, lr 0.3: cells 9, 10, 11
  REQUIRE(seeds.size() == 3);
  REQUIRE(*seeds[0] == 9);
  REQUIRE(*seeds[2] == 11);
}

TEST_CASE("shards partition the cells", "[experiments][grid]") {
  std::vector<int> hits(11, 0);
  for (std::size_t k = 1; k <= 3; ++k)
    for (std::size_t c : Shard{k, 3}.cells(11)) ++hits[c];
  REQUIRE(hits == std::vector<int>(11, 1));
  REQUIRE(Shard{3, 3}.cells(11) == std::vector<std::size_t>{2, 5, 8});
}

// A cell's result as a grid experiment has one: a struct and its JSON line.
struct Measured {
  double value = 0.0;
  std::vector<double> curve;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Measured, value, curve)

std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }

TEST_CASE("two shards written and merged give back every result bit for bit", "[experiments][grid]") {
  const Grid g = small_grid();
  const double odd[] = {0.1 + 0.2, -0.0, std::numeric_limits<double>::denorm_min(), 1e308 * 10, -1e308 * 10,
                        std::nan(""), -std::nan(""), 1.0 / 3.0, std::bit_cast<double>(std::uint64_t{0x7ff8000000000123})};
  std::vector<Measured> results(g.size());
  for (std::size_t c = 0; c < g.size(); ++c)
    results[c] = {odd[c % 9] * static_cast<double>(c + 1), {odd[(c + 1) % 9], odd[(c + 2) % 9], 2.5}};
  const fs::path dir = fs::temp_directory_path() / "gradscope_test_grid_shards";
  fs::remove_all(dir);
  for (std::size_t k = 1; k <= 2; ++k) {
    std::vector<nlohmann::json> mine;
    for (std::size_t c : Shard{k, 2}.cells(g.size())) mine.push_back(results[c]);
    write_shard(dir / std::to_string(k), g, Shard{k, 2}.cells(g.size()), mine, "test", Shard{k, 2}, "--seeds=3");
  }
  // JSON has no NaN or infinity: they are strings that say which, never null.
  const std::string text = gs::nn::read_file(dir / "1" / shard_file);
  REQUIRE(text.find("null") == std::string::npos);
  REQUIRE(text.find("\"-inf\"") != std::string::npos);
  REQUIRE(text.find("\"nan:0x7ff8000000000123\"") != std::string::npos);

  const std::vector<std::string> both = {(dir / "2").string(), (dir / "1").string()};
  const nlohmann::json blank = Measured{};
  const std::vector<MergedCell> back = read_shards(both, g, "test", "--seeds=3", blank);
  for (std::size_t c = 0; c < g.size(); ++c) {
    INFO("cell " << c);
    const Measured m = back[c].result.get<Measured>();
    REQUIRE(bits(m.value) == bits(results[c].value));
    REQUIRE(m.curve.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) REQUIRE(bits(m.curve[i]) == bits(results[c].curve[i]));
  }
  REQUIRE(back[7].origin == "--merge " + (dir / "2").string() + ": cell 7 (pre, lr 0.001, seed 1)");
  REQUIRE_THROWS_WITH(read_shards({(dir / "1").string()}, g, "test", "--seeds=3", blank), Catch::Contains("shard 2 of 2 is missing"));
  REQUIRE_THROWS_WITH(read_shards(both, g, "test", "--seeds=4", blank), Catch::Contains("with the flags '--seeds=3'"));
  REQUIRE_THROWS_WITH(read_shards(both, g, "other", "--seeds=3", blank), Catch::Contains("measured by test"));
  REQUIRE_THROWS_WITH(read_shards({(dir / "1").string(), (dir / "1").string()}, g, "test", "--seeds=3", blank),
                      Catch::Contains("both hold shard 1"));
  REQUIRE_THROWS_WITH(read_shards({dir.string()}, g, "test", "--seeds=3", blank), Catch::Contains("holds no shard.json"));
  Grid other;
  other.axis("placement", {"post", "peri"}).axis("lr", g.labels(1)).axis("seed", {"0", "1", "2"});
  REQUIRE_THROWS_WITH(read_shards(both, other, "test", "--seeds=3", blank), Catch::Contains("has placement pre"));
  fs::remove_all(dir);
}

}  // namespace test_experiments_grid
