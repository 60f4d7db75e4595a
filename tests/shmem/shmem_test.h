/*
 * The helpers the OpenSHMEM test programs share (header only, plain C11). The programs use
 * the standard OpenSHMEM 1.5 API and nothing of ethx, so they run on any implementation
 * (README.md: how they are run and what each checks).
 *
 * A check is one line: "<test> PE <me>/<npes>: ok <name>" on stdout, or
 * "<test> PE <me>/<npes>: FAIL <name>: <what, expected, got>" on stderr. A failed check does
 * not stop the program: every PE goes on through the same collective calls, so one wrong
 * value does not turn into a hang. st_finish prints the PE's summary and gives the exit status.
 */
#ifndef ETHX_SHMEM_TEST_H
#define ETHX_SHMEM_TEST_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep under -std=c11 */
#endif

#include <shmem.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shmem_compat14.h"

#define ST_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))

typedef struct st_state {
  const char* test;
  int me;
  int npes;
  int checks;
  int failures;
  int quiet;          /* -q: print failures and the summary only */
  int allow_null_ptr; /* --allow-null-ptr: shmem_ptr may return NULL (not on ethx) */
} st_state;

static st_state st = {"test", -1, 0, 0, 0, 0, 0};

typedef struct st_check {
  char name[192];
  char detail[384];
  int failed;
  long extra_failures; /* mismatches after the first, which detail describes */
} st_check;

/* Takes the common options out of argv (-q, --allow-null-ptr); returns the new argc. */
static inline int st_args(const char* test, int argc, char** argv) {
  st.test = test;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
      st.quiet = 1;
    } else if (strcmp(argv[i], "--allow-null-ptr") == 0) {
      st.allow_null_ptr = 1;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argv[kept] = NULL;
  return kept;
}

/* After shmem_init: learns this PE and the PE count; the tests need two PEs or more. */
static inline void st_started(void) {
  st.me = shmem_my_pe();
  st.npes = shmem_n_pes();
  if (st.npes < 2) {
    fprintf(stderr, "%s PE %d/%d: FAIL setup: needs at least 2 PEs (oshrun -np 4 %s)\n", st.test,
            st.me, st.npes, st.test);
    exit(1);
  }
}

static inline int st_right(void) {
  return (st.me + 1) % st.npes;
}
static inline int st_left(void) {
  return (st.me + st.npes - 1) % st.npes;
}

static inline void st_begin(st_check* c, const char* format, ...) ST_PRINTF(2, 3);
static inline void st_begin(st_check* c, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(c->name, sizeof c->name, format, args);
  va_end(args);
  c->detail[0] = '\0';
  c->failed = 0;
  c->extra_failures = 0;
}

/* Records a mismatch; the first one is the one reported. */
static inline void st_fail(st_check* c, const char* format, ...) ST_PRINTF(2, 3);
static inline void st_fail(st_check* c, const char* format, ...) {
  if (c->failed) {
    ++c->extra_failures;
    return;
  }
  c->failed = 1;
  va_list args;
  va_start(args, format);
  vsnprintf(c->detail, sizeof c->detail, format, args);
  va_end(args);
}

/* Prints the check's line; returns 1 if it passed. */
static inline int st_end(st_check* c) {
  ++st.checks;
  if (!c->failed) {
    if (!st.quiet) printf("%s PE %d/%d: ok   %s\n", st.test, st.me, st.npes, c->name);
    fflush(stdout);
    return 1;
  }
  ++st.failures;
  if (c->extra_failures > 0) {
    fprintf(stderr, "%s PE %d/%d: FAIL %s: %s (and %ld more)\n", st.test, st.me, st.npes, c->name,
            c->detail, c->extra_failures);
  } else {
    fprintf(stderr, "%s PE %d/%d: FAIL %s: %s\n", st.test, st.me, st.npes, c->name, c->detail);
  }
  fflush(stderr);
  return 0;
}

static inline void st_expect_i64(st_check* c, const char* what, long long expected, long long got) {
  if (expected != got) st_fail(c, "%s: expected %lld, got %lld", what, expected, got);
}

static inline void st_expect_u64(st_check* c, const char* what, unsigned long long expected,
                                 unsigned long long got) {
  if (expected != got) st_fail(c, "%s: expected 0x%llx, got 0x%llx", what, expected, got);
}

static inline void st_expect_double(st_check* c, const char* what, double expected, double got) {
  if (expected != got) st_fail(c, "%s: expected %.17g, got %.17g", what, expected, got);
}

/* Compares n bytes; reports the first differing offset. */
static inline void st_expect_bytes(st_check* c, const char* what, const void* expected,
                                   const void* got, size_t n) {
  const unsigned char* e = (const unsigned char*)expected;
  const unsigned char* g = (const unsigned char*)got;
  for (size_t i = 0; i < n; ++i) {
    if (e[i] != g[i]) {
      st_fail(c, "%s: byte %zu of %zu: expected 0x%02x, got 0x%02x", what, i, n, e[i], g[i]);
      return;
    }
  }
}

/* One check that is a single condition. */
static inline int st_check_that(int condition, const char* name, const char* detail) {
  st_check c;
  st_begin(&c, "%s", name);
  if (!condition) st_fail(&c, "%s", detail);
  return st_end(&c);
}

/* The PE's summary line; the exit status for main. */
static inline int st_finish(void) {
  if (st.failures == 0) {
    printf("%s PE %d/%d: PASS (%d checks)\n", st.test, st.me, st.npes, st.checks);
    fflush(stdout);
    return 0;
  }
  fprintf(stderr, "%s PE %d/%d: FAILED %d of %d checks\n", st.test, st.me, st.npes, st.failures,
          st.checks);
  fflush(stderr);
  return 1;
}

/* shmem_malloc that ends the whole job when it fails: nothing after it could be checked. */
static inline void* st_malloc(size_t bytes, const char* what) {
  void* p = shmem_malloc(bytes);
  if (p == NULL && bytes > 0) {
    fprintf(stderr, "%s PE %d/%d: FAIL setup: shmem_malloc(%zu) for %s returned NULL\n", st.test,
            st.me, st.npes, bytes, what);
    shmem_global_exit(1);
  }
  return p;
}

/* A byte of the data PE `seed` sends: differs by position, sender and round, never constant. */
static inline unsigned char st_pattern(unsigned seed, size_t offset) {
  uint32_t x = seed * 2654435761u + (uint32_t)offset * 40503u + (uint32_t)(offset >> 8) * 977u;
  x ^= x >> 13;
  return (unsigned char)(x * 0x5bd1e995u >> 24);
}

static inline void st_fill(void* buffer, size_t bytes, unsigned seed) {
  unsigned char* b = (unsigned char*)buffer;
  for (size_t i = 0; i < bytes; ++i) b[i] = st_pattern(seed, i);
}

/* First offset where buffer differs from the pattern, or `bytes` if none. */
static inline size_t st_pattern_mismatch(const void* buffer, size_t bytes, unsigned seed) {
  const unsigned char* b = (const unsigned char*)buffer;
  for (size_t i = 0; i < bytes; ++i) {
    if (b[i] != st_pattern(seed, i)) return i;
  }
  return bytes;
}

static inline void st_expect_pattern(st_check* c, const char* what, const void* buffer,
                                     size_t bytes, unsigned seed) {
  size_t bad = st_pattern_mismatch(buffer, bytes, seed);
  if (bad < bytes) {
    st_fail(c, "%s: byte %zu of %zu: expected 0x%02x, got 0x%02x", what, bad, bytes,
            st_pattern(seed, bad), ((const unsigned char*)buffer)[bad]);
  }
}

/* Every byte of [buffer, buffer + bytes) is `value` (guard areas around a transfer). */
static inline void st_expect_filled(st_check* c, const char* what, const void* buffer, size_t bytes,
                                    unsigned char value) {
  const unsigned char* b = (const unsigned char*)buffer;
  for (size_t i = 0; i < bytes; ++i) {
    if (b[i] != value) {
      st_fail(c, "%s: byte %zu of %zu was overwritten: expected 0x%02x, got 0x%02x", what, i, bytes,
              value, b[i]);
      return;
    }
  }
}

static inline int64_t st_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static inline int st_compare_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a;
  uint64_t y = *(const uint64_t*)b;
  return (x > y) - (x < y);
}

/* The n old values of n increments by one, from every PE (gathered on one PE): sorted they must
 * be exactly 0 ... n-1, or some increment was lost or returned a value twice. Sorts them. */
static inline void st_expect_serial_increments(st_check* c, const char* what, uint64_t* olds,
                                               size_t n) {
  qsort(olds, n, sizeof(uint64_t), st_compare_u64);
  for (size_t i = 0; i < n; ++i) {
    if (olds[i] != i) {
      st_fail(c, "%s: sorted old value %zu: expected %zu, got %llu%s", what, i, i,
              (unsigned long long)olds[i], i > 0 && olds[i] == olds[i - 1] ? " (twice)" : "");
      return;
    }
  }
}

/* An election by compare-swap of -1 into a word now holding `winner`: olds[pe] is what PE pe
 * got back. Exactly one PE saw -1, and it is the winner; every other saw the winner. */
static inline void st_expect_election(st_check* c, const long long* olds, int npes,
                                      long long winner) {
  int winners = 0;
  for (int pe = 0; pe < npes; ++pe) {
    if (olds[pe] == -1) {
      ++winners;
      if (pe != winner) st_fail(c, "PE %d saw -1 but the word holds %lld", pe, winner);
    } else if (olds[pe] != winner) {
      st_fail(c, "PE %d lost to %lld but the word holds %lld", pe, olds[pe], winner);
    }
  }
  st_expect_i64(c, "PEs that saw -1 (winners)", 1, winners);
}

#endif /* ETHX_SHMEM_TEST_H */
