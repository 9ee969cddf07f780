# Precompiled headers: xtensor's core headers (and Catch2's, in the tests), compiled once per target
# instead of once per file. They change nothing a file means: every file still includes what it uses,
# and the precompiled header is only a faster way to read those includes. Only the headers nearly every
# file reads are in it: a larger one (CLI11, nlohmann) is slower to load than to parse where it is used
# (docs/performance.md, "Build time").
#
#   gradscope_precompile(target [CATCH])      xtensor's core, plus Catch2
#   gradscope_precompile_like(target other)   reuse other's: the two targets' compile flags are the same
set(gradscope_pch_core
  <cmath> <functional> <string> <vector>
  <xtensor/xarray.hpp> <xtensor/xbuilder.hpp> <xtensor/xmath.hpp> <xtensor/xview.hpp>)

function(gradscope_precompile target)
  set(headers ${gradscope_pch_core})
  if("CATCH" IN_LIST ARGN)
    list(APPEND headers <catch2/catch.hpp>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()

function(gradscope_precompile_like target other)
  target_precompile_headers(${target} REUSE_FROM ${other})
endfunction()
