# Compiler flags shared by every gradscope target: warnings, and the sanitizers when asked for.
add_library(gradscope_flags INTERFACE)
target_compile_options(gradscope_flags INTERFACE -Wall -Wextra)
if(GRADSCOPE_SANITIZE)
  target_compile_options(gradscope_flags INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(gradscope_flags INTERFACE -fsanitize=address,undefined)
endif()
