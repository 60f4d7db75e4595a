/*
 * Where the library keeps things in each PE's symmetric memory, the same on every PE, and the
 * PE's own state. Internal to the library. The offsets below are symmetric offsets: the
 * load-store backend keeps all of it in the GPU's memory (HBM, BAR 2) at these offsets; the
 * rdma backend keeps the library's memory and the heap at these offsets of one region of
 * ordinary RAM and the data segment where the program has it (shmem_backend.h).
 *
 *   offset 0        control: barrier flags by set slot and round, the global-exit word
 *   kStagingOffset  staging: this PE's bounce buffer for copy-engine puts and gets of private
 *                   memory (never touched remotely)
 *   kScratchOffset  scratch: collectives' symmetric scratch
 *   data_offset     the program's data segment (globals and statics), page-aligned
 *   heap_offset     the symmetric heap (SHMEM_SYMMETRIC_SIZE bytes)
 */
#ifndef ETHX_SHMEM_LAYOUT_H
#define ETHX_SHMEM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "shmem_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ETHX_SHMEM_SET_SLOTS 64u  /* barrier flag sets (active sets hash onto them) */
#define ETHX_SHMEM_MAX_ROUNDS 32u /* dissemination rounds: up to 2^32 PEs */
#define ETHX_SHMEM_MAX_SETS 256u  /* distinct active sets one PE synchronises */
#define ETHX_SHMEM_CONTROL_BYTES (64u << 10)
#define ETHX_SHMEM_GLOBAL_EXIT_OFFSET \
  (ETHX_SHMEM_SET_SLOTS * ETHX_SHMEM_MAX_ROUNDS * sizeof(uint64_t))
#define ETHX_SHMEM_STAGING_OFFSET ETHX_SHMEM_CONTROL_BYTES
#define ETHX_SHMEM_STAGING_BYTES (1u << 20)
#define ETHX_SHMEM_SCRATCH_OFFSET (ETHX_SHMEM_STAGING_OFFSET + ETHX_SHMEM_STAGING_BYTES)
#define ETHX_SHMEM_SCRATCH_BYTES (1u << 20)
#define ETHX_SHMEM_DATA_OFFSET (ETHX_SHMEM_SCRATCH_OFFSET + ETHX_SHMEM_SCRATCH_BYTES)

/* A region of local address space that is symmetric: [base, base + bytes) is at symmetric
 * offset `offset` on every PE (in HBM, for the load-store backend). */
typedef struct ethx_shmem_region {
  uintptr_t base;
  size_t bytes;
  uint64_t offset;
} ethx_shmem_region;

typedef struct ethx_shmem_state {
  int initialized;
  int finalized;
  int me;
  int npes;
  int thread_level;
  int exiting;  /* shmem_global_exit: telling the others; failures are ignored */
  uint32_t job; /* tags flag values: stale ones of an earlier run never match */
  const ethx_shmem_backend* backend;
  /* This PE's symmetric memory from offset 0: the library's (control, staging, scratch) and
   * the heap. The GPU's HBM, mapped (load-store), or the registered region (rdma). */
  uint8_t* memory;
  uint64_t memory_bytes;
  ethx_shmem_region data; /* the program's data segment (in HBM for load-store) */
  ethx_shmem_region heap; /* the symmetric heap */
  /* Barriers each active set has completed, by set (ETHX_SHMEM_MAX_SETS at most). */
  struct {
    int start, stride, size;
    uint32_t epoch;
  } sets[ETHX_SHMEM_MAX_SETS];
  unsigned set_count;
  size_t put_copy_min_bytes; /* load-store: puts this long or longer use the copy engine */
  size_t get_copy_min_bytes; /* gets likewise */
  int64_t yield_ns;          /* how long a wait yields before it sleeps */
  long max_sleep_ns;         /* the longest single sleep of a wait (they double up to it) */
} ethx_shmem_state;

extern ethx_shmem_state ethx_shmem_g_state;

/* Symmetric offset of [addr, addr + bytes), or UINT64_MAX if it is not symmetric. */
uint64_t ethx_shmem_offset_of(const void* addr, size_t bytes);
/* The local address of symmetric offset `offset` (the inverse of ethx_shmem_offset_of). */
void* ethx_shmem_local_addr(uint64_t offset);

/* The heap at symmetric offset `offset`, `bytes` long: state->memory + offset. */
void ethx_shmem_heap_init(uint64_t offset, size_t bytes);

/* The barrier of SHMEM_TEAM_WORLD (shmem_init, shmem_finalize, shmem_barrier_all). */
void ethx_shmem_world_barrier(int with_quiet);

/* One load of exactly `width` (1, 2, 4, 8) bytes: window accesses keep their width. */
uint64_t ethx_shmem_load_one(const volatile void* at, unsigned width);

#ifdef __cplusplus
}
#endif

#endif /* ETHX_SHMEM_LAYOUT_H */
