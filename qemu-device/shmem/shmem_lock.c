/*
 * Locks: a ticket lock in the lock word (a symmetric long, zero when free) on PE 0, the same
 * word for every PE. High 32 bits: the next ticket; low 32 bits: the ticket served. Waiting PEs
 * are served in the order they took tickets (the spec's first come, first served).
 */
#include "shmem_api.h"

enum { ETHX_LOCK_PE = 0 };
#define ETHX_LOCK_TICKET ((uint64_t)1 << 32)

_Static_assert(sizeof(long) == sizeof(uint64_t), "the lock word holds two 32-bit tickets");

static uint64_t ethx_lock_amo(enum ethx_shmem_amo_op op, long* lock, uint64_t operand,
                              uint64_t compare, const char* fn) {
  if (!ethx_shmem_is_symmetric(lock, sizeof *lock)) {
    ethx_shmem_fatal("%s: lock %p is not symmetric", fn, (void*)lock);
  }
  return ethx_api_amo(op, lock, sizeof *lock, operand, compare, ETHX_LOCK_PE, fn);
}

static uint32_t ethx_lock_next(uint64_t word) {
  return (uint32_t)(word >> 32);
}

static uint32_t ethx_lock_served(uint64_t word) {
  return (uint32_t)word;
}

void shmem_set_lock(long* lock) {
  ethx_shmem_require_init(__func__);
  uint64_t word = ethx_lock_amo(ETHX_AMO_FETCH_ADD, lock, ETHX_LOCK_TICKET, 0, __func__);
  uint32_t ticket = ethx_lock_next(word);
  ethx_shmem_waiter waiter = {0};
  while (ethx_lock_served(word) != ticket) {
    ethx_shmem_waiter_pause(&waiter);
    word = ethx_lock_amo(ETHX_AMO_FETCH, lock, 0, 0, __func__);
  }
}

void shmem_clear_lock(long* lock) {
  ethx_shmem_require_init(__func__);
  /* The spec: the critical region's accesses are complete before the lock is free. */
  ethx_shmem_quiet_all();
  /* Serve the next ticket. Others may take tickets meanwhile, so compare-swap; an add would
   * carry into the next-ticket half when the served half wraps. */
  uint64_t word = ethx_lock_amo(ETHX_AMO_FETCH, lock, 0, 0, __func__);
  for (;;) {
    uint64_t next = (word & ~(uint64_t)UINT32_MAX) | (uint32_t)(ethx_lock_served(word) + 1u);
    uint64_t seen = ethx_lock_amo(ETHX_AMO_CSWAP, lock, next, word, __func__);
    if (seen == word) {
      return;
    }
    word = seen;
  }
}

/* 0 when this call took the lock, 1 when it is held (or wanted) by another PE. */
int shmem_test_lock(long* lock) {
  ethx_shmem_require_init(__func__);
  uint64_t word = ethx_lock_amo(ETHX_AMO_FETCH, lock, 0, 0, __func__);
  for (;;) {
    if (ethx_lock_next(word) != ethx_lock_served(word)) {
      return 1;
    }
    uint64_t seen = ethx_lock_amo(ETHX_AMO_CSWAP, lock, word + ETHX_LOCK_TICKET, word, __func__);
    if (seen == word) {
      return 0;
    }
    word = seen;
  }
}
