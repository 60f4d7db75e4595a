# OpenSHMEM's public API (qemu-device/shmem: include/shmem.h and the API's .c files), without
# a fabric. Included from tests/CMakeLists.txt.

set(ETHX_SHMEM_DIR ${ETHX_ROOT}/qemu-device/shmem)

# The API over a unit-test double of the core (tests/unit/shmem_core_test_double.*): its own
# executable, so that it never meets the real core (shmem_core*.c, not listed here).
set(ETHX_SHMEM_API_SOURCES shmem_amo_typed.c shmem_api_util.c shmem_collectives.c
    shmem_deprecated.c shmem_lock.c shmem_profiling.c shmem_reduce.c shmem_rma_typed.c
    shmem_sync_typed.c shmem_team.c)
list(TRANSFORM ETHX_SHMEM_API_SOURCES PREPEND ${ETHX_SHMEM_DIR}/)
add_executable(ethx_shmem_api_tests unit/shmem_api_test.cpp unit/shmem_core_test_double.cpp
               unit/shmem_api_c11_calls.c ${ETHX_SHMEM_API_SOURCES})
set_target_properties(ethx_shmem_api_tests PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON
                      C_EXTENSIONS OFF)
target_include_directories(ethx_shmem_api_tests PRIVATE ${ETHX_ROOT} ${ETHX_SHMEM_DIR}/include)
target_link_libraries(ethx_shmem_api_tests PRIVATE GTest::gtest GTest::gtest_main
                      Threads::Threads ethx_warnings)
gtest_discover_tests(ethx_shmem_api_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit)

# shmem.h compiles warning-free as C11 (every type-generic name with every type of its table),
# C99 (no generics) and C++17 (the overloads). Compile-only: the build is the test.
foreach(check c11 c99 cxx17)
  set(source ${CMAKE_CURRENT_SOURCE_DIR}/shmem/header_${check}.c)
  if(check STREQUAL "cxx17")
    set(source ${CMAKE_CURRENT_SOURCE_DIR}/shmem/header_cxx17.cpp)
  endif()
  add_library(ethx_shmem_header_${check} OBJECT ${source})
  target_include_directories(ethx_shmem_header_${check} PRIVATE ${ETHX_SHMEM_DIR}/include)
  target_compile_options(ethx_shmem_header_${check} PRIVATE -Wall -Wextra -Werror -pedantic)
endforeach()
set_target_properties(ethx_shmem_header_c11 PROPERTIES C_STANDARD 11 C_EXTENSIONS OFF)
set_target_properties(ethx_shmem_header_c99 PROPERTIES C_STANDARD 99 C_EXTENSIONS OFF)
set_target_properties(ethx_shmem_header_cxx17 PROPERTIES CXX_STANDARD 17 CXX_EXTENSIONS OFF)

# What 1.5 has and this library does not provide fails to compile, with the error that names
# it (a generic name given a type outside its table selects an undefined, argument-less
# function); the control case compiles.
set(ETHX_SHMEM_REJECTS
    "FLOAT_FETCH_ADD|ethx_shmem_generic_type_not_supported"
    "LONGLONG_FETCH_AND|ethx_shmem_generic_type_not_supported"
    "CONTEXTS|shmem_ctx_t" "PUT_SIGNAL|shmem_put_signal" "WAIT_UNTIL_ALL|shmem_wait_until_all"
    "TEAM_SPLIT|shmem_team_split_strided")
foreach(entry ${ETHX_SHMEM_REJECTS})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 case)
  list(GET parts 1 expected)
  string(TOLOWER "${case}" name)
  add_test(NAME shmem_header_rejects_${name}
           COMMAND ${CMAKE_C_COMPILER} -std=c11 -fsyntax-only -Werror -DETHX_CASE_${case}
                   -I${ETHX_SHMEM_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR}/shmem/header_rejects.c)
  set_tests_properties(shmem_header_rejects_${name} PROPERTIES LABELS unit
                       PASS_REGULAR_EXPRESSION "error[^\n]*${expected}|${expected}[^\n]*declared here")
endforeach()
add_test(NAME shmem_header_rejects_control
         COMMAND ${CMAKE_C_COMPILER} -std=c11 -fsyntax-only -Werror -DETHX_CASE_NONE
                 -I${ETHX_SHMEM_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR}/shmem/header_rejects.c)
set_tests_properties(shmem_header_rejects_control PROPERTIES LABELS unit)
