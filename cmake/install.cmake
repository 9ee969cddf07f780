# `cmake --install <build> --prefix <dir>` installs the engine and nn libraries (static), their headers
# under <dir>/include/gradscope/{engine,nn}/ (so `#include "engine/engine.hpp"` keeps working), and a
# CMake package, so that an out-of-tree project can write
#   find_package(gradscope REQUIRED)
#   target_link_libraries(my_target PRIVATE gradscope::nn)   # or gradscope::engine
# (tests/coursework/extension/ is such a project). The install rules of each library are in its
# own CMakeLists.txt; this file writes the package config around their export set.
include(CMakePackageConfigHelpers)
set(gradscope_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/gradscope)

install(EXPORT gradscopeTargets NAMESPACE gradscope:: DESTINATION ${gradscope_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gradscopeConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/gradscopeConfig.cmake INSTALL_DESTINATION ${gradscope_cmake_dir})
# 0.x: only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gradscopeConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gradscopeConfig.cmake ${PROJECT_BINARY_DIR}/gradscopeConfigVersion.cmake
        DESTINATION ${gradscope_cmake_dir})
