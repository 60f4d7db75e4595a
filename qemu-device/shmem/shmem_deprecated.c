/*
 * Deprecated names 1.5 still lists that are not typed families: start_pes, shmalloc, shfree,
 * shmemalign, shrealloc, _my_pe, _num_pes, and the active-set shmem_barrier and shmem_sync.
 * (The deprecated typed AMO, wait and collective names are next to their 1.5 forms.)
 */
#include <stdlib.h>

#include "shmem_api.h"

static void finalize_at_exit(void) {
  shmem_finalize();
}

/* npes is ignored, as the spec says: the PEs are the ones oshrun started. Programs of the
 * start_pes era never call shmem_finalize: it runs at exit. */
void start_pes(int npes) {
  (void)npes;
  shmem_init();
  static int registered;
  if (!registered && atexit(finalize_at_exit) == 0) registered = 1;
}

void* shmalloc(size_t size) {
  ethx_shmem_require_init(__func__);
  return shmem_malloc(size);
}

void shfree(void* ptr) {
  ethx_shmem_require_init(__func__);
  shmem_free(ptr);
}

void* shmemalign(size_t alignment, size_t size) {
  ethx_shmem_require_init(__func__);
  return shmem_align(alignment, size);
}

void* shrealloc(void* ptr, size_t size) {
  ethx_shmem_require_init(__func__);
  return shmem_realloc(ptr, size);
}

int _my_pe(void) {
  ethx_shmem_require_init(__func__);
  return shmem_my_pe();
}

int _num_pes(void) {
  ethx_shmem_require_init(__func__);
  return shmem_n_pes();
}

/* pSync is accepted and not used: the core's barrier has its own flags, keyed by the set. */
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long* pSync) {
  ethx_shmem_require_init(__func__);
  (void)pSync;
  ethx_shmem_set set = ethx_api_active_set(PE_start, logPE_stride, PE_size, __func__);
  ethx_shmem_barrier_set(&set, 1);
}

/* In parentheses: in C11 shmem_sync is also the type-generic macro of shmem.h. */
void(shmem_sync)(int PE_start, int logPE_stride, int PE_size, long* pSync) {
  ethx_shmem_require_init("shmem_sync");
  (void)pSync;
  ethx_shmem_set set = ethx_api_active_set(PE_start, logPE_stride, PE_size, "shmem_sync");
  ethx_shmem_barrier_set(&set, 0);
}
