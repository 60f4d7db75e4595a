/*
 * Point-to-point synchronization: shmem_<T>_wait_until and shmem_<T>_test for the standard
 * AMO types and (deprecated) short and unsigned short, and the deprecated shmem_wait,
 * shmem_wait_until (long) and shmem_<T>_wait. The waiting itself is the core's (spin briefly,
 * then yield, then sleep: several PEs share a CPU).
 */
#include "shmem_api.h"

/* The X-macros below take types and pieces of names, which cannot be parenthesised. */
/* NOLINTBEGIN(bugprone-macro-parentheses) */

static void ethx_sync_check(const void* ivar, size_t bytes, int cmp, const char* fn) {
  if (cmp < SHMEM_CMP_EQ || cmp > SHMEM_CMP_GE) {
    ethx_shmem_fatal("%s: cmp %d is not a comparison (SHMEM_CMP_EQ %d ... SHMEM_CMP_GE %d)", fn,
                     cmp, SHMEM_CMP_EQ, SHMEM_CMP_GE);
  }
  /* Only a symmetric ivar can be changed by another PE: waiting on any other would hang. */
  if (!ethx_shmem_is_symmetric(ivar, bytes)) {
    ethx_shmem_fatal(
        "%s: ivar %p is not symmetric (not in the symmetric heap or the data "
        "segment)",
        fn, ivar);
  }
}

void ethx_api_wait_until(const void* ivar, size_t bytes, int is_signed, int cmp, uint64_t value,
                         const char* fn) {
  ethx_sync_check(ivar, bytes, cmp, fn);
  ethx_shmem_wait_until(ivar, (unsigned)bytes, is_signed, cmp, value);
}

int ethx_api_test(const void* ivar, size_t bytes, int is_signed, int cmp, uint64_t value,
                  const char* fn) {
  ethx_sync_check(ivar, bytes, cmp, fn);
  return ethx_shmem_test(ivar, (unsigned)bytes, is_signed, cmp, value);
}

/* A constant expression; compares with 1, not 0, so unsigned types draw no warning. */
#define ETHX_IS_SIGNED(TYPE) ((TYPE)-1 < (TYPE)1)

/* cmp_value goes to the core as its sizeof(TYPE) low bytes; the core reads ivar at that width
 * and compares both as signed or unsigned values of that width. */
#define ETHX_DEFINE_SYNC(NAME, TYPE, A)                                           \
  void shmem_##NAME##_wait_until(TYPE* ivar, int cmp, TYPE cmp_value) {           \
    ethx_shmem_require_init(__func__);                                            \
    ethx_api_wait_until(ivar, sizeof(TYPE), ETHX_IS_SIGNED(TYPE), cmp,            \
                        ethx_api_load_bits(&cmp_value, sizeof(TYPE)), __func__);  \
  }                                                                               \
  int shmem_##NAME##_test(TYPE* ivar, int cmp, TYPE cmp_value) {                  \
    ethx_shmem_require_init(__func__);                                            \
    return ethx_api_test(ivar, sizeof(TYPE), ETHX_IS_SIGNED(TYPE), cmp,           \
                         ethx_api_load_bits(&cmp_value, sizeof(TYPE)), __func__); \
  }
ETHX_SHMEM_SYNC_TYPES(ETHX_DEFINE_SYNC, _)

/* Deprecated: shmem_wait is shmem_wait_until with SHMEM_CMP_NE. */
#define ETHX_DEFINE_WAIT_DEPRECATED(NAME, TYPE, A)                               \
  void shmem_##NAME##_wait(TYPE* ivar, TYPE cmp_value) {                         \
    ethx_shmem_require_init(__func__);                                           \
    ethx_api_wait_until(ivar, sizeof(TYPE), ETHX_IS_SIGNED(TYPE), SHMEM_CMP_NE,  \
                        ethx_api_load_bits(&cmp_value, sizeof(TYPE)), __func__); \
  }
ETHX_SHMEM_WAIT_DEPRECATED_TYPES(ETHX_DEFINE_WAIT_DEPRECATED, _)

void shmem_wait(long* ivar, long cmp_value) {
  ethx_shmem_require_init(__func__);
  ethx_api_wait_until(ivar, sizeof(long), 1, SHMEM_CMP_NE,
                      ethx_api_load_bits(&cmp_value, sizeof(long)), __func__);
}

/* In parentheses: in C11 shmem_wait_until is also the type-generic macro of shmem.h. */
void(shmem_wait_until)(long* ivar, int cmp, long cmp_value) {
  ethx_shmem_require_init("shmem_wait_until");
  ethx_api_wait_until(ivar, sizeof(long), 1, cmp, ethx_api_load_bits(&cmp_value, sizeof(long)),
                      "shmem_wait_until");
}

/* NOLINTEND(bugprone-macro-parentheses) */
