/*
 * The OpenSHMEM library's core, as the rest of the library uses it (not installed): the PE's
 * GPU and symmetric memory, byte-wise RMA, atomics, ordering, the active-set barrier and
 * waiting. The public API (include/shmem.h: typed, type-generic, deprecated names,
 * collectives) is written on top of these. docs/shmem.md explains how each maps onto the
 * fabric.
 *
 * Symmetric addresses: an address in the symmetric heap or in the program's data segment
 * (globals and statics, moved into the GPU's memory by shmem_init). Every PE has the same
 * layout, so (address - start of its region) is the same on every PE.
 */
#ifndef ETHX_SHMEM_CORE_H
#define ETHX_SHMEM_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "shmem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- state and checks ---- */
int ethx_shmem_initialized(void);
int ethx_shmem_me(void);
int ethx_shmem_npes(void);
/* Every public function starts with this: a call before shmem_init is a fatal error naming
 * the function ("shmem_putmem called before shmem_init"). */
void ethx_shmem_require_init(const char* function);
/* A PE number out of [0, npes) is a fatal error naming the function and the PE. */
void ethx_shmem_check_pe(int pe, const char* function);
/* Prints "ethx-shmem: PE <me>: <message>" on stderr and ends the program (status 1; the other
 * PEs are stopped by oshrun). */
void ethx_shmem_fatal(const char* format, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* True if [addr, addr + bytes) is symmetric (heap or data segment). */
int ethx_shmem_is_symmetric(const void* addr, size_t bytes);

/* ---- RMA (bytes) ----
 * dest (put) or src (get) must be symmetric; the other side may be any local memory. Returns
 * when the local buffer may be reused (put) or the data has arrived (get). */
void ethx_shmem_put_bytes(void* dest, const void* src, size_t bytes, int pe);
void ethx_shmem_get_bytes(void* dest, const void* src, size_t bytes, int pe);
/* One element of 1, 2, 4 or 8 bytes (shmem_<T>_p / _g, and their building block). */
void ethx_shmem_put_value(void* dest, uint64_t value, unsigned width, int pe);
uint64_t ethx_shmem_get_value(const void* src, unsigned width, int pe);

/* ---- atomics (width 4 or 8, dest symmetric and naturally aligned) ----
 * Returns the old value (zero-extended) for every op; callers of the non-fetching forms
 * ignore it. Local PEs go through the device too, so they stay atomic with remote ones. */
enum ethx_shmem_amo_op {
  ETHX_AMO_FETCH,     /* read */
  ETHX_AMO_SET,       /* write (swap, result ignored) */
  ETHX_AMO_SWAP,      /* swap */
  ETHX_AMO_CSWAP,     /* compare-swap: compare, then operand */
  ETHX_AMO_FETCH_ADD, /* add operand (inc: operand 1) */
  ETHX_AMO_FETCH_AND, /* bitwise, compare-swap loops */
  ETHX_AMO_FETCH_OR,
  ETHX_AMO_FETCH_XOR,
};
uint64_t ethx_shmem_amo(enum ethx_shmem_amo_op op, void* dest, unsigned width, uint64_t operand,
                        uint64_t compare, int pe);

/* ---- ordering ---- */
void ethx_shmem_quiet_all(void); /* every put, store and AMO so far is complete at its target */
void ethx_shmem_fence_all(void); /* puts to one PE are delivered in order across the fence */

/* ---- active sets: PEs start, start + stride, ..., size of them (SHMEM_TEAM_WORLD: 0, 1, n) */
typedef struct ethx_shmem_set {
  int start;
  int stride;
  int size;
} ethx_shmem_set;
ethx_shmem_set ethx_shmem_world(void);
/* This PE's index in the set, or -1 if it is not a member. */
int ethx_shmem_set_index(const ethx_shmem_set* set);
int ethx_shmem_set_pe(const ethx_shmem_set* set, int index);
/* Dissemination barrier over the set: ceil(log2 size) rounds of one flag store each.
 * with_quiet: shmem_quiet first (barrier semantics), else only synchronisation (sync). */
void ethx_shmem_barrier_set(const ethx_shmem_set* set, int with_quiet);

/* ---- symmetric scratch for collectives ----
 * ethx_shmem_scratch_bytes() bytes at the same place on every PE, owned by the one collective
 * running (collectives begin with a sync of their set, so the previous one is done with it). */
void* ethx_shmem_scratch(void);
size_t ethx_shmem_scratch_bytes(void);

/* ---- waiting on local symmetric memory ----
 * cmp is SHMEM_CMP_EQ ... SHMEM_CMP_GE; values of `width` bytes, signed or not. Waits spin
 * briefly, then yield, then sleep in growing steps (several PEs share a CPU). */
int ethx_shmem_compare(int cmp, uint64_t have, uint64_t want, unsigned width, int is_signed);
void ethx_shmem_wait_until(const volatile void* ivar, unsigned width, int is_signed, int cmp,
                           uint64_t value);
int ethx_shmem_test(const volatile void* ivar, unsigned width, int is_signed, int cmp,
                    uint64_t value);

typedef struct ethx_shmem_waiter {
  unsigned rounds;
  int64_t yield_until_ns; /* set when the spinning ends */
} ethx_shmem_waiter;
/* One step of an adaptive wait: spin, then sched_yield for ETHX_SHMEM_YIELD_NS (1 ms), then
 * sleep. Initialise with {0}. */
void ethx_shmem_waiter_pause(ethx_shmem_waiter* waiter);

#ifdef __cplusplus
}
#endif

#endif /* ETHX_SHMEM_CORE_H */
