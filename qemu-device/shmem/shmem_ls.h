/*
 * The load-store backend (shmem_backend.h), internal: PE k is GPU k, every symmetric byte is in
 * the GPUs' HBM at its symmetric offset, and GPU p's HBM is at p × aperture in the window.
 */
#ifndef ETHX_SHMEM_LS_H
#define ETHX_SHMEM_LS_H

#include <stddef.h>
#include <stdint.h>

#include "ethx/gpu.h"

typedef struct ethx_shmem_ls {
  ethx_dev* dev;            /* this PE's GPU, its command registers held for the job */
  volatile uint8_t* window; /* the remote window (BAR 4) */
  uint64_t aperture_bytes;
} ethx_shmem_ls;

extern ethx_shmem_ls ethx_shmem_g_ls;

/* Window address of symmetric offset `offset` on PE `pe`, and that address mapped. */
uint64_t ethx_shmem_ls_window_addr(int pe, uint64_t offset);
volatile void* ethx_shmem_ls_window_ptr(int pe, uint64_t offset);
/* Fatal if `status` is a failure, naming `what` and the device's latched error. */
void ethx_shmem_ls_check(const char* what, int status);

/* RMA (shmem_ls_rma.c): window loads and stores, the copy engine for large transfers. */
void ethx_shmem_ls_put(uint64_t dest_offset, const void* src, size_t bytes, int pe);
void ethx_shmem_ls_get(void* dest, uint64_t src_offset, size_t bytes, int pe);
void ethx_shmem_ls_put_value(uint64_t dest_offset, uint64_t value, unsigned width, int pe);
uint64_t ethx_shmem_ls_get_value(uint64_t src_offset, unsigned width, int pe);

#endif /* ETHX_SHMEM_LS_H */
