/* Point-to-point waits on this PE's own symmetric memory: remote puts land in HBM, which the
 * program reads directly, so a wait is a loop of local loads with adaptive pauses. */
#include "shmem_core.h"
#include "shmem_layout.h"

/* The value as a signed 64-bit number (sign-extended from `width` bytes). */
static int64_t as_signed(uint64_t value, unsigned width) {
  if (width == 8) return (int64_t)value;
  const unsigned shift = 64 - 8 * width;
  return (int64_t)(value << shift) >> shift;
}

static uint64_t as_unsigned(uint64_t value, unsigned width) {
  return width == 8 ? value : value & ((UINT64_C(1) << (8 * width)) - 1);
}

static int ordered(int cmp, int less, int equal) {
  switch (cmp) {
    case SHMEM_CMP_EQ:
      return equal;
    case SHMEM_CMP_NE:
      return !equal;
    case SHMEM_CMP_GT:
      return !less && !equal;
    case SHMEM_CMP_LE:
      return less || equal;
    case SHMEM_CMP_LT:
      return less;
    case SHMEM_CMP_GE:
      return !less;
    default:
      ethx_shmem_fatal("wait/test: unknown comparison %d (SHMEM_CMP_EQ ... GE)", cmp);
  }
}

int ethx_shmem_compare(int cmp, uint64_t have, uint64_t want, unsigned width, int is_signed) {
  if (is_signed) {
    const int64_t a = as_signed(have, width);
    const int64_t b = as_signed(want, width);
    return ordered(cmp, a < b, a == b);
  }
  const uint64_t a = as_unsigned(have, width);
  const uint64_t b = as_unsigned(want, width);
  return ordered(cmp, a < b, a == b);
}

int ethx_shmem_test(const volatile void* ivar, unsigned width, int is_signed, int cmp,
                    uint64_t value) {
  return ethx_shmem_compare(cmp, ethx_shmem_load_one(ivar, width), value, width, is_signed);
}

void ethx_shmem_wait_until(const volatile void* ivar, unsigned width, int is_signed, int cmp,
                           uint64_t value) {
  if (!ethx_shmem_is_symmetric((const void*)ivar, width)) {
    ethx_shmem_fatal("shmem wait: %p is not a symmetric object of this PE", (const void*)ivar);
  }
  ethx_shmem_waiter waiter = {0};
  while (!ethx_shmem_test(ivar, width, is_signed, cmp, value)) ethx_shmem_waiter_pause(&waiter);
}
