/* Atomics: every one through the GPU's command interface (ATOMIC_*), local ones included, so
 * a PE's own atomics stay atomic with remote PEs' on the same word. The device has fetch-add,
 * swap and compare-swap; fetch is a fetch-add of 0, the bitwise ones compare-swap loops. */
#include <inttypes.h>
#include <stdio.h>

#include "shmem_core.h"
#include "shmem_layout.h"

static uint64_t device_atomic(int op, uint64_t window_addr, unsigned width, uint64_t operand,
                              uint64_t compare) {
  uint64_t old = 0;
  const int status =
      ethx_dev_atomic(ethx_shmem_g_state.dev, op, window_addr, width, operand, compare, &old);
  if (status != ETHX_GPU_OK) {
    char what[96];
    snprintf(what, sizeof what, "shmem atomic at window address 0x%" PRIx64, window_addr);
    ethx_shmem_check_device(what, status);
  }
  return old;
}

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

/* old <- fetch; repeat compare-swap(old, old op operand) until nobody changed it between. */
static uint64_t bitwise_loop(enum ethx_shmem_amo_op op, uint64_t addr, unsigned width,
                             uint64_t operand) {
  uint64_t old = device_atomic(ETHX_GPU_FETCH_ADD, addr, width, 0, 0);
  for (;;) {
    const uint64_t wanted = truncate_to(apply_bitwise(op, old, operand), width);
    const uint64_t seen = device_atomic(ETHX_GPU_COMPARE_SWAP, addr, width, wanted, old);
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
  const uint64_t addr = ethx_shmem_window_addr(pe, offset);
  operand = truncate_to(operand, width);
  compare = truncate_to(compare, width);
  switch (op) {
    case ETHX_AMO_FETCH:
      return device_atomic(ETHX_GPU_FETCH_ADD, addr, width, 0, 0);
    case ETHX_AMO_SET:
    case ETHX_AMO_SWAP:
      return device_atomic(ETHX_GPU_SWAP, addr, width, operand, 0);
    case ETHX_AMO_CSWAP:
      return device_atomic(ETHX_GPU_COMPARE_SWAP, addr, width, operand, compare);
    case ETHX_AMO_FETCH_ADD:
      return device_atomic(ETHX_GPU_FETCH_ADD, addr, width, operand, 0);
    case ETHX_AMO_FETCH_AND:
    case ETHX_AMO_FETCH_OR:
    case ETHX_AMO_FETCH_XOR:
      return bitwise_loop(op, addr, width, operand);
  }
  ethx_shmem_fatal("shmem atomic: unknown operation %d", (int)op);
}
