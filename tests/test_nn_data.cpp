// Datasets: next-token batches, the character vocabulary, and Markov chains whose entropy rate can be
// worked out by hand.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "check.hpp"
#include "nn/data/markov.hpp"

namespace test_nn_data {  // one namespace per test file: the files compile in groups

using namespace gs;
using namespace gs::nn;

namespace {

// H(p) for a two-outcome distribution (p, 1 - p), in nats.
double h2(double p) { return -p * std::log(p) - (1 - p) * std::log(1 - p); }

}  // namespace

TEST_CASE("batches are windows of the stream with targets shifted by one token", "[train][data]") {
  Tokens stream;
  for (int i = 0; i < 1000; ++i) stream.push_back(i % 97);
  Dataset data(stream, Tokens(stream.begin(), stream.begin() + 50), std::vector<std::string>(97, "x"));
  std::mt19937_64 rng(5);
  const Batch b = data.batch(Split::train, 8, 20, rng);
  REQUIRE(shape_of(b.inputs) == Shape{8, 20});
  REQUIRE(shape_of(b.targets) == Shape{8, 20});
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t t = 0; t < 20; ++t) {
      REQUIRE(b.targets(i, t) == (b.inputs(i, t) + 1) % 97);  // the next token of the stream
      if (t + 1 < 20) REQUIRE(b.targets(i, t) == b.inputs(i, t + 1));
    }
  // The same seed gives the same batch; the short validation split refuses a too-long window.
  std::mt19937_64 again(5);
  REQUIRE(xt::all(xt::equal(data.batch(Split::train, 8, 20, again).inputs, b.inputs)));
  REQUIRE_THROWS_WITH(data.batch(Split::validation, 1, 50, rng), Catch::Contains("fewer than seq + 1"));
  REQUIRE_NOTHROW(data.batch(Split::validation, 1, 49, rng));
}

TEST_CASE("a character dataset: sorted distinct bytes, encode and decode, a train/validation split",
          "[train][data]") {
  const auto path = std::filesystem::temp_directory_path() / ("gradscope-test-" + std::to_string(::getpid()) + ".txt");
  std::ofstream(path) << "hello world, hello data";
  const Dataset data = char_dataset(path, 0.25);
  std::filesystem::remove(path);
  REQUIRE(data.vocab() == 11);  // " ,adehlortw"
  REQUIRE(data.decode(0) == " ");
  REQUIRE(data.decode(1) == ",");
  REQUIRE(data.decode(10) == "w");
  REQUIRE(data.tokens(Split::train).size() == 17);  // 23 characters, 75% of them
  REQUIRE(data.tokens(Split::validation).size() == 6);
  REQUIRE(data.decode(data.tokens(Split::train)) + data.decode(data.tokens(Split::validation)) ==
          "hello world, hello data");
  REQUIRE(data.decode(data.encode("toad")) == "toad");
  REQUIRE_THROWS_WITH(data.encode("xyz"), Catch::Contains("'x'"));
  REQUIRE_THROWS_WITH(char_dataset("/nonexistent/file.txt"), Catch::Contains("/nonexistent/file.txt"));
}

TEST_CASE("a character dataset reads only a regular file, up to a size limit named in the error", "[train][data]") {
  const auto dir = std::filesystem::temp_directory_path() / ("gradscope-test-data-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  // Each used to allocate gigabytes (/dev/zero), block (a FIFO), or fail obscurely (a directory).
  REQUIRE_THROWS_WITH(char_dataset("/dev/zero"), Catch::Equals("/dev/zero: not a regular file (a device)"));
  REQUIRE_THROWS_WITH(char_dataset(dir), Catch::Contains("not a regular file (a directory)"));
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  REQUIRE_THROWS_WITH(char_dataset(dir / "fifo"), Catch::Contains("not a regular file (a FIFO)"));
  std::ofstream(dir / "big.txt") << std::string(3 << 20, 'a') + "b";
  REQUIRE_THROWS_WITH(char_dataset(dir / "big.txt", 0.1, std::size_t{2} << 20),
                      Catch::Equals((dir / "big.txt").string() + ": 3.0 MiB is more than the limit of 2.0 MiB for this file"));
  REQUIRE(char_dataset(dir / "big.txt").vocab() == 2);  // under the default limit
  REQUIRE_THROWS_WITH(char_dataset(dir / "big.txt", std::nan("")), Catch::Contains("validation fraction nan"));
  REQUIRE_THROWS_WITH(char_dataset(dir / "big.txt", 1.0), Catch::Contains("is not in [0, 1)"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("Markov options that are NaN or out of range are refused", "[train][markov]") {
  MarkovOptions o;
  o.concentration = std::nan("");
  REQUIRE_THROWS_WITH(MarkovChain(o), Catch::Contains("concentration must be a positive finite number, not nan"));
  o.concentration = INFINITY;
  REQUIRE_THROWS_WITH(MarkovChain(o), Catch::Contains("not inf"));
  o.concentration = 0.1;
  o.smoothing = std::nan("");
  REQUIRE_THROWS_WITH(MarkovChain(o), Catch::Contains("smoothing must be in [0, 1], not nan"));
}

TEST_CASE("Markov chain of order 1 over 2 tokens: stationary distribution and entropy rate by hand",
          "[train][markov]") {
  // P(1 | 0) = a, P(0 | 1) = b: pi = (b, a) / (a + b), h = pi_0 H(a) + pi_1 H(b).
  const double a = 0.1, b = 0.3;
  const MarkovChain chain(2, 1, {{1 - a, a}, {b, 1 - b}});
  REQUIRE(chain.stationary()[0] == Approx(0.75).epsilon(1e-12));
  REQUIRE(chain.stationary()[1] == Approx(0.25).epsilon(1e-12));
  const double h = 0.75 * h2(0.1) + 0.25 * h2(0.3);
  REQUIRE(chain.entropy_rate() == Approx(h).epsilon(1e-12));
  REQUIRE(chain.entropy_rate() == Approx(0.396528).epsilon(1e-5));
  REQUIRE(chain.window_floor(16) == Approx(h).epsilon(1e-12));  // order 1: every position has its context

  // A long run has the stationary frequencies and the transition frequencies.
  std::mt19937_64 rng(1);
  const Tokens run = chain.generate(200000, rng);
  double ones = 0, from0 = 0, zero_to_one = 0;
  for (std::size_t i = 0; i + 1 < run.size(); ++i) {
    ones += static_cast<double>(run[i]);
    if (run[i] == 0) {
      ++from0;
      zero_to_one += static_cast<double>(run[i + 1]);
    }
  }
  REQUIRE(ones / static_cast<double>(run.size()) == Approx(0.25).margin(0.01));
  REQUIRE(zero_to_one / from0 == Approx(0.1).margin(0.01));
}

TEST_CASE("Markov chain of order 2: the window floor pays for the missing context at the first position",
          "[train][markov]") {
  // Contexts (x1, x2) -> index 2 x1 + x2. The next token repeats x1 with probability 0.9.
  const MarkovChain chain(2, 2, {{0.9, 0.1}, {0.9, 0.1}, {0.1, 0.9}, {0.1, 0.9}});
  // By symmetry pi is uniform over the 4 contexts, and every row has entropy H(0.1).
  for (double p : chain.stationary()) REQUIRE(p == Approx(0.25).epsilon(1e-12));
  REQUIRE(chain.entropy_rate() == Approx(h2(0.1)).epsilon(1e-12));
  // Position 0 sees x1 only; x2 is then independent of x1 (uniform), so it pays H_2 - H_1 = log 2.
  REQUIRE(chain.window_floor(1) == Approx(std::log(2.0)).epsilon(1e-12));
  REQUIRE(chain.window_floor(4) == Approx((std::log(2.0) + 3 * h2(0.1)) / 4).epsilon(1e-12));
}

TEST_CASE("Markov chain of order 0 is i.i.d.", "[train][markov]") {
  const MarkovChain chain(3, 0, {{0.5, 0.25, 0.25}});
  REQUIRE(chain.contexts() == 1);
  REQUIRE(chain.entropy_rate() == Approx(1.5 * std::log(2.0)).epsilon(1e-12));
}

TEST_CASE("random Markov chains are seeded, valid and well below log V", "[train][markov]") {
  MarkovOptions o;
  o.vocab = 16;
  o.order = 2;
  const MarkovChain chain(o), same(o);
  REQUIRE(chain.contexts() == 256);
  REQUIRE(chain.next(17) == same.next(17));
  double total = 0;
  for (std::size_t c = 0; c < chain.contexts(); ++c) {
    double s = 0;
    for (double p : chain.next(c)) {
      REQUIRE(p >= o.smoothing / 16);
      s += p;
    }
    REQUIRE(s == Approx(1.0));
    total += chain.stationary()[c];
  }
  REQUIRE(total == Approx(1.0));
  REQUIRE(chain.entropy_rate() < 0.6 * std::log(16.0));
  REQUIRE(chain.window_floor(32) > chain.entropy_rate());

  const Dataset data = markov_dataset(chain, 1000, 100, 0);
  REQUIRE(data.vocab() == 16);
  REQUIRE(data.tokens(Split::train).size() == 1000);
  REQUIRE(data.decode(Tokens{0, 1, 15}) == "abp");
  REQUIRE_THROWS_WITH(MarkovChain(2, 1, {{0.5, 0.6}, {0.5, 0.5}}), Catch::Contains("not a distribution"));
}

}  // namespace test_nn_data
