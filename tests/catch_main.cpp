// Catch2's main(), in a translation unit of its own so that it is compiled once.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
