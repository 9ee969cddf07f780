// Helpers shared by the tests.
#pragma once

#include <cstdint>
#include <source_location>
#include <type_traits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "engine/array.hpp"
#include "engine/error.hpp"
#include "engine/parameter.hpp"
#include "engine/tape.hpp"
#include "engine/var.hpp"
#include "engine/tools/gradcheck.hpp"

// Runs the gradient checker and fails with its report (worst error and where) if it does not pass.
#define REQUIRE_GRADCHECK(f, inputs)                     \
  do {                                                   \
    const gs::GradcheckResult gc_ = gs::gradcheck(f, inputs); \
    INFO(gc_.report);                                    \
    REQUIRE(gc_.ok);                                     \
  } while (0)

// Fails unless yours and expected have one shape and |yours - expected| <= atol + rtol |expected| in
// every element (xt::allclose's rule), printing where they differ most: the element's index, both
// values, the largest absolute and relative difference, and the tolerance as written.
#define REQUIRE_CLOSE(yours, expected, rtol, atol)                                     \
  do {                                                                                 \
    const std::string close_ = gs::test::difference(yours, expected, rtol, atol);      \
    if (!close_.empty()) FAIL(#yours " and " #expected " differ: " << close_);         \
    SUCCEED(#yours " and " #expected " agree");                                        \
  } while (0)

// Fails unless |value| <= tolerance, printing both in full (Catch's own expansion rounds 1e-12 to 0.0).
#define REQUIRE_SMALL(value, tolerance)                                                \
  do {                                                                                 \
    const std::string small_ = gs::test::not_small(value, tolerance);                  \
    if (!small_.empty()) FAIL(#value " " << small_);                                   \
    SUCCEED(#value " is small");                                                       \
  } while (0)

namespace gs::test {

// A tolerance stated for each build: the float64 build's, then the float32 build's (gs::Real = float
// carries about 7 digits, and a sum of n terms loses about log2(n) bits more).
inline constexpr double tol(double f64, double f32) { return float32_build ? f32 : f64; }

// The bits of one Real, to compare arrays bit for bit.
using RealBits = std::conditional_t<float32_build, std::uint32_t, std::uint64_t>;


using Vars = std::vector<Var>;

// "" when close (REQUIRE_CLOSE's rule), else what differs: "worst at (1, 2): yours 0.31, expected
// -0.31; largest |difference| 0.62, largest relative difference 2; tolerance 1e-12 + 1e-10 |expected|".
std::string difference(const Array& yours, const Array& expected, double rtol, double atol);
// "" when |value| <= tolerance, else "is 0.2263836699, more than the tolerance 1e-12 from 0".
std::string not_small(double value, double tolerance);

// A reproducible array of normal(0, 1) values of the given shape.
Array randn(const Shape& shape, unsigned seed);
// The same, shifted away from zero: |x| >= 0.5 (for ops with a kink or a pole at 0).
Array randn_away_from_zero(const Shape& shape, unsigned seed);
// |normal(0, 1)| + 0.5: strictly positive, for log, sqrt, pow with a fractional exponent, divisors.
Array randn_positive(const Shape& shape, unsigned seed);

// REQUIRE_GRADCHECK as a function, for call sites whose lambda or braced input list has top-level
// commas (which a macro argument cannot hold). A failure names the caller's line.
inline void require_gradcheck(const CheckedFunction& f, const std::vector<Array>& inputs,
                              std::source_location where = std::source_location::current()) {
  INFO("gradcheck called from " << site_str(where));
  REQUIRE_GRADCHECK(f, inputs);
}

}  // namespace gs::test
