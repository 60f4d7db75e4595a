/*
 * What the public API's files share (not installed): the typed, sized, generic-backed and
 * deprecated routines of include/shmem.h are thin; the work is here, on shmem_core.h.
 *
 * Every public routine calls ethx_shmem_require_init(__func__) itself, first. These helpers
 * assume it did; they check the rest (PE numbers, sets, counts) and name the public routine,
 * `fn`, in every error.
 */
#ifndef ETHX_SHMEM_API_H
#define ETHX_SHMEM_API_H

#include <stddef.h>
#include <stdint.h>

#include "shmem.h"
#include "shmem_core.h"

/* ---- values: a 1, 2, 4 or 8-byte value (integer or floating) as the low bytes of a
 * uint64_t, the form the core's element and atomic calls take, whatever the byte order ---- */
uint64_t ethx_api_load_bits(const void* value, size_t bytes);
void ethx_api_store_bits(void* value, uint64_t bits, size_t bytes);

/* nelems x elem_bytes, or a fatal error naming fn when it does not fit in size_t. */
size_t ethx_api_bytes(size_t nelems, size_t elem_bytes, const char* fn);
/* A count passed as int (deprecated routines): negative is a fatal error naming the field. */
size_t ethx_api_count(int count, const char* field, const char* fn);

/* ---- RMA of elements of elem_bytes (1, 2, 4, 8 or 16) ---- */
void ethx_api_put(void* dest, const void* source, size_t nelems, size_t elem_bytes, int pe,
                  const char* fn);
void ethx_api_get(void* dest, const void* source, size_t nelems, size_t elem_bytes, int pe,
                  const char* fn);
/* One element: *value (bytes of it) to dest on pe; source on pe to *value. */
void ethx_api_p(void* dest, const void* value, size_t bytes, int pe, const char* fn);
void ethx_api_g(void* value, const void* source, size_t bytes, int pe, const char* fn);
/* Strided: element i goes between dest + i*dst and source + i*sst (in elements). */
void ethx_api_iput(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                   size_t elem_bytes, int pe, const char* fn);
void ethx_api_iget(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                   size_t elem_bytes, int pe, const char* fn);

/* ---- atomics: dest of `bytes` (4 or 8) on pe, naturally aligned; returns the old value ---- */
uint64_t ethx_api_amo(enum ethx_shmem_amo_op op, const void* dest, size_t bytes, uint64_t operand,
                      uint64_t compare, int pe, const char* fn);

/* ---- point-to-point synchronization on the local, symmetric ivar ---- */
void ethx_api_wait_until(const void* ivar, size_t bytes, int is_signed, int cmp, uint64_t value,
                         const char* fn);
int ethx_api_test(const void* ivar, size_t bytes, int is_signed, int cmp, uint64_t value,
                  const char* fn);

/* ---- teams and active sets ---- */
/* SHMEM_TEAM_WORLD's set; SHMEM_TEAM_INVALID or any other handle is a fatal error. */
ethx_shmem_set ethx_api_team_set(shmem_team_t team, const char* fn);
/* (PE_start, 1 << logPE_stride, PE_size), checked against the PEs there are and containing
 * the calling PE (only members may call an active-set routine), else a fatal error. */
ethx_shmem_set ethx_api_active_set(int PE_start, int logPE_stride, int PE_size, const char* fn);

/* ---- collectives over a set (the caller is a member); bytes are per PE ----
 * Each begins with a sync of the set, so the previous collective is done with dest and the
 * scratch everywhere, and ends with a barrier (quiet, then sync), so dest is complete on
 * every PE when any returns. */
/* root is an index in the set; update_root: team semantics (dest on the root too). */
void ethx_api_broadcast(const ethx_shmem_set* set, void* dest, const void* source, size_t bytes,
                        int root, int update_root, const char* fn);
void ethx_api_fcollect(const ethx_shmem_set* set, void* dest, const void* source, size_t bytes);
/* bytes may differ between PEs. */
void ethx_api_collect(const ethx_shmem_set* set, void* dest, const void* source, size_t bytes,
                      const char* fn);
void ethx_api_alltoall(const ethx_shmem_set* set, void* dest, const void* source, size_t bytes);
void ethx_api_alltoalls(const ethx_shmem_set* set, void* dest, const void* source, ptrdiff_t dst,
                        ptrdiff_t sst, size_t nelems, size_t elem_bytes, const char* fn);

/* Reduction: acc[i] = acc[i] (op) in[i] for i < count, elements of one type. */
typedef void (*ethx_api_combine_fn)(void* acc, const void* in, size_t count);
void ethx_api_reduce(const ethx_shmem_set* set, void* dest, const void* source, size_t nelems,
                     size_t elem_bytes, ethx_api_combine_fn combine, const char* fn);

#endif /* ETHX_SHMEM_API_H */
