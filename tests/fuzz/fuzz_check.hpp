// Invariant checks inside fuzz targets. A failed check aborts, which libFuzzer records as a
// crash with the input that caused it; the message says which invariant broke.
#pragma once

#include <cstdio>
#include <cstdlib>

#define ETHX_FUZZ_CHECK(condition)                                                           \
  do {                                                                                       \
    if (!(condition)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (false)
