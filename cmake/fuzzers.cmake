# libFuzzer build (docs/fuzzing.md). Every library is instrumented for coverage and built with
# ASan/UBSan, so a bug the fuzzer drives into ethx code is caught where it happens; only the
# fuzz targets themselves link libFuzzer's main (tests/fuzz/CMakeLists.txt).
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "ETHX_WITH_FUZZERS=ON needs clang: configure with CC=clang CXX=clang++")
endif()
# UBSan findings must stop the run like ASan's do, or libFuzzer never records them as crashes.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                    -fno-omit-frame-pointer)
add_link_options(-fsanitize=address,undefined)
