# Warnings for every ethx target; the build must stay free of them.
add_library(ethx_warnings INTERFACE)
target_compile_options(ethx_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
  $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor> $<$<COMPILE_LANGUAGE:CXX>:-Wold-style-cast>
  -Wcast-align
  -Wimplicit-fallthrough -Wformat=2)
# GCC 12 reports -Wrestrict and -Wnull-dereference inside libstdc++'s own std::string code at -O2
# (GCC bug 105651 and relatives); they are not about our code and would bury real warnings.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(ethx_warnings INTERFACE -Wno-restrict)
endif()
if(ETHX_WERROR)
  target_compile_options(ethx_warnings INTERFACE -Werror)
endif()
# The same for the C libraries programs link (the SDK, OpenSHMEM), less the C++-only ones.
add_library(ethx_c_warnings INTERFACE)
target_compile_options(ethx_c_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Wcast-align
  -Wimplicit-fallthrough -Wformat=2)
if(ETHX_WERROR)
  target_compile_options(ethx_c_warnings INTERFACE -Werror)
endif()
if(ETHX_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
