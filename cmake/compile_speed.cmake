# Precompiled headers: xtensor's core headers (and Catch2's, in the tests), compiled once per target
# instead of once per file. They change nothing a file means: every file still includes what it uses,
# and the precompiled header is only a faster way to read those includes. Only the headers nearly every
# file reads are in it: a larger one (CLI11, nlohmann) is slower to load than to parse where it is used
# (docs/performance.md, "Build time").
#
#   gradscope_precompile(target [CATCH])      xtensor's core, plus Catch2
#   gradscope_precompile_like(target other)   reuse other's: the two targets' compile flags are the same
#
# Unity builds: a library's files compile in batches of up to eight, one translation unit per batch, so
# that the headers a batch shares are read, and the templates they instantiate compiled, once per batch.
# Every file still includes what it uses and keeps its helpers in an anonymous namespace; two files of one
# library must not give two helpers the same name. A file with compile options of its own, or one that
# another target compiles again (gdb_demo's engine/tape.cpp, engine/var.cpp, nn/layernorm.cpp), is
# compiled alone.
#
#   gradscope_unity(target [ALONE file...])   the target in batches, the ALONE files each by itself
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

function(gradscope_unity target)
  cmake_parse_arguments(PARSE_ARGV 1 unity "" "" "ALONE")
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE BATCH UNITY_BUILD_BATCH_SIZE 8)
  if(unity_ALONE)
    set_source_files_properties(${unity_ALONE} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
endfunction()
