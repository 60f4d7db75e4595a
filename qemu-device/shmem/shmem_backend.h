/*
 * How the core reaches other PEs: a backend, chosen at shmem_init from ETHX_SHMEM_BACKEND.
 * Internal to the library (docs/shmem.md).
 *
 *   load-store (default)  PE k is GPU k; the library's memory, the data segment and the heap
 *                         live in the GPU's HBM; remote access through the window, atomics and
 *                         copies through the command interface (shmem_ls.c)
 *   rdma                  libibverbs RC queue pairs; the library's memory and the heap in one
 *                         registered region of ordinary RAM, the data segment registered where
 *                         it is; peers addressed by offset from each region's base
 *                         (shmem_rdma*.c)
 *
 * The core (shmem_rma.c, shmem_amo.c, shmem_order.c, shmem_symmetric.c) validates arguments,
 * turns addresses into symmetric offsets (shmem_layout.h: the same on every PE), does what
 * needs no other PE itself (put and get to the own PE are memmove), and calls the backend for
 * the rest. Every function is fatal on failure (ethx_shmem_fatal): they return only on
 * success.
 */
#ifndef ETHX_SHMEM_BACKEND_H
#define ETHX_SHMEM_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ethx_shmem_state;

/* The atomic primitives a backend provides; the core builds the rest from them (fetch =
 * fetch-add 0, set = swap, and/or/xor = compare-swap loops). */
enum ethx_shmem_atomic_op {
  ETHX_ATOMIC_FETCH_ADD,
  ETHX_ATOMIC_SWAP,
  ETHX_ATOMIC_COMPARE_SWAP, /* stores operand if the word equals compare */
};

typedef struct ethx_shmem_backend {
  const char* name; /* as ETHX_SHMEM_BACKEND spells it */
  /* Opens the transport and lays out this PE's symmetric memory (state->memory, state->data,
   * the heap through ethx_shmem_heap_init), ready for the first barrier. */
  void (*init)(struct ethx_shmem_state* state);
  void (*finalize)(struct ethx_shmem_state* state);
  /* RMA with another PE (never the own one). dest_offset / src_offset: the symmetric offset
   * of the remote object; the local side is any memory. put returns when `src` may be reused,
   * get when `dest` holds the data. */
  void (*put)(uint64_t dest_offset, const void* src, size_t bytes, int pe);
  void (*get)(void* dest, uint64_t src_offset, size_t bytes, int pe);
  /* One naturally aligned value of 1, 2, 4 or 8 bytes (shmem_p / shmem_g). */
  void (*put_value)(uint64_t dest_offset, uint64_t value, unsigned width, int pe);
  uint64_t (*get_value)(uint64_t src_offset, unsigned width, int pe);
  /* A 4- or 8-byte atomic on any PE, the own one included (through the same path as remote
   * ones, so they stay atomic with each other); returns the old value. */
  uint64_t (*atomic)(enum ethx_shmem_atomic_op op, uint64_t offset, unsigned width,
                     uint64_t operand, uint64_t compare, int pe);
  /* Every put, value store and flag store so far is complete at its target. */
  void (*quiet)(void);
  /* Puts to one PE are delivered in order across the fence. */
  void (*fence)(void);
  /* A posted 8-byte store into another PE's library memory (barrier flags, the global-exit
   * word): ordered after this PE's earlier stores to that PE once quiet has run. */
  void (*store_flag)(int pe, uint64_t offset, uint64_t value);
  /* A pointer through which loads and stores reach the object at `offset` on another PE, or
   * NULL if the backend has none. */
  void* (*ptr)(uint64_t offset, int pe);
} ethx_shmem_backend;

extern const ethx_shmem_backend ethx_shmem_backend_load_store;
extern const ethx_shmem_backend ethx_shmem_backend_rdma;

/* ---- helpers the backends share (shmem_symmetric.c, shmem_init.c) ---- */

/* The main program's writable data segment (.data, .bss, the GOT), page-rounded: its start in
 * *base and size in *bytes; both 0 if the program has none. */
void ethx_shmem_find_data_segment(uintptr_t* base, size_t* bytes);

/* Where the heap goes (the next page after the data segment, which sits at
 * state->data.hbm_offset) and how large it is: SHMEM_SYMMETRIC_SIZE, default `default_bytes`
 * (UINT64_MAX: all that fits). At most `limit_bytes` of symmetric memory in all; more is fatal,
 * naming the variable and `what` (e.g. "the GPU's memory", "this machine's memory"). */
void ethx_shmem_plan_heap(const struct ethx_shmem_state* state, uint64_t limit_bytes,
                          uint64_t default_bytes, const char* what, uint64_t* heap_offset,
                          size_t* heap_bytes);

/* A size from the environment (bytes, or with K, M or G); `fallback` when unset; fatal,
 * naming the variable, when it does not parse. */
uint64_t ethx_shmem_env_size(const char* name, uint64_t fallback);

#ifdef __cplusplus
}
#endif

#endif /* ETHX_SHMEM_BACKEND_H */
