/* Atomics: the backend's fetch-add, swap and compare-swap (shmem_backend.h), for the own PE too,
 * so a PE's own atomics stay atomic with remote PEs' on the same word. Fetch is a fetch-add of
 * 0, set a swap, the bitwise ones compare-swap loops. */
#include "shmem_core.h"
#include "shmem_layout.h"

static uint64_t truncate_to(uint64_t value, unsigned width) {
  return width == 8 ? value : value & ((UINT64_C(1) << (8 * width)) - 1);
}

static uint64_t apply_bitwise(enum ethx_shmem_amo_op op, uint64_t old, uint64_t operand) {
  switch (op) {
    case ETHX_AMO_FETCH_AND:
      return old & operand;
    case ETHX_AMO_FETCH_OR:
      return old | operand;
    default:
      return old ^ operand;
  }
}

static uint64_t backend_atomic(enum ethx_shmem_atomic_op op, uint64_t offset, unsigned width,
                               uint64_t operand, uint64_t compare, int pe) {
  return ethx_shmem_g_state.backend->atomic(op, offset, width, operand, compare, pe);
}

/* old <- fetch; repeat compare-swap(old, old op operand) until nobody changed it between. */
static uint64_t bitwise_loop(enum ethx_shmem_amo_op op, uint64_t offset, unsigned width,
                             uint64_t operand, int pe) {
  uint64_t old = backend_atomic(ETHX_ATOMIC_FETCH_ADD, offset, width, 0, 0, pe);
  for (;;) {
    const uint64_t wanted = truncate_to(apply_bitwise(op, old, operand), width);
    const uint64_t seen = backend_atomic(ETHX_ATOMIC_COMPARE_SWAP, offset, width, wanted, old, pe);
    if (seen == old) return old;
    old = seen;
  }
}

uint64_t ethx_shmem_amo(enum ethx_shmem_amo_op op, void* dest, unsigned width, uint64_t operand,
                        uint64_t compare, int pe) {
  if (width != 4 && width != 8) ethx_shmem_fatal("shmem atomic: width %u (4 or 8)", width);
  const uint64_t offset = ethx_shmem_offset_of(dest, width);
  if (offset == UINT64_MAX || (uintptr_t)dest % width != 0) {
    ethx_shmem_fatal("shmem atomic: %p is not a naturally aligned symmetric %u-byte object", dest,
                     width);
  }
  operand = truncate_to(operand, width);
  compare = truncate_to(compare, width);
  switch (op) {
    case ETHX_AMO_FETCH:
      return backend_atomic(ETHX_ATOMIC_FETCH_ADD, offset, width, 0, 0, pe);
    case ETHX_AMO_SET:
    case ETHX_AMO_SWAP:
      return backend_atomic(ETHX_ATOMIC_SWAP, offset, width, operand, 0, pe);
    case ETHX_AMO_CSWAP:
      return backend_atomic(ETHX_ATOMIC_COMPARE_SWAP, offset, width, operand, compare, pe);
    case ETHX_AMO_FETCH_ADD:
      return backend_atomic(ETHX_ATOMIC_FETCH_ADD, offset, width, operand, 0, pe);
    case ETHX_AMO_FETCH_AND:
    case ETHX_AMO_FETCH_OR:
    case ETHX_AMO_FETCH_XOR:
      return bitwise_loop(op, offset, width, operand, pe);
  }
  ethx_shmem_fatal("shmem atomic: unknown operation %d", (int)op);
}
