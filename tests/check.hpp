// Helpers shared by the tests.
#pragma once

#include <source_location>
#include <vector>

#include <catch2/catch.hpp>

#include "engine/engine.hpp"
#include "engine/tools/gradcheck.hpp"

// Runs the gradient checker and fails with its report (worst error and where) if it does not pass.
#define REQUIRE_GRADCHECK(f, inputs)                     \
  do {                                                   \
    const gs::GradcheckResult gc_ = gs::gradcheck(f, inputs); \
    INFO(gc_.report);                                    \
    REQUIRE(gc_.ok);                                     \
  } while (0)

namespace gs::test {

using Vars = std::vector<Var>;

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
