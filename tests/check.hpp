// Helpers shared by the tests.
#pragma once

#include <catch2/catch.hpp>

#include "engine/engine.hpp"

// Runs the gradient checker and fails with its report (worst error and where) if it does not pass.
#define REQUIRE_GRADCHECK(f, inputs)                     \
  do {                                                   \
    const gs::GradcheckResult gc_ = gs::gradcheck(f, inputs); \
    INFO(gc_.report);                                    \
    REQUIRE(gc_.ok);                                     \
  } while (0)

namespace gs::test {

// A reproducible array of normal(0, 1) values of the given shape.
Array randn(const Shape& shape, unsigned seed);
// The same, shifted away from zero: |x| >= 0.5 (for ops with a kink or a pole at 0).
Array randn_away_from_zero(const Shape& shape, unsigned seed);

}  // namespace gs::test
