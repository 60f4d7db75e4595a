/* The load-store backend (shmem_backend.h): PE k is GPU k. shmem_init opens the GPU and holds
 * its command registers, moves the program's data segment into HBM and puts the heap after
 * it; remote stores and loads go through the window, atomics through the command interface
 * (for the own PE too), quiet through FLUSH. RMA is in shmem_ls_rma.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shmem_core.h"
#include "shmem_layout.h"
#include "shmem_ls.h"

ethx_shmem_ls ethx_shmem_g_ls;

void ethx_shmem_ls_check(const char* what, int status) {
  if (status == ETHX_GPU_OK) return;
  ethx_dev_fault fault = {0, 0};
  ethx_dev* dev = ethx_shmem_g_ls.dev;
  const int latched = status > 0 ? ethx_dev_take_error(dev, &fault) : status;
  ethx_shmem_fatal("%s: %s (window address 0x%" PRIx64 ")%s%s", what, ethx_dev_status_name(status),
                   fault.fault_addr, latched < 0 || status < 0 ? ": " : "",
                   latched < 0 || status < 0 ? ethx_dev_last_error(dev) : "");
}

uint64_t ethx_shmem_ls_window_addr(int pe, uint64_t offset) {
  return (uint64_t)pe * ethx_shmem_g_ls.aperture_bytes + offset;
}

volatile void* ethx_shmem_ls_window_ptr(int pe, uint64_t offset) {
  return ethx_shmem_g_ls.window + ethx_shmem_ls_window_addr(pe, offset);
}

/* Opens this PE's GPU (PE k is GPU k) and holds its command registers for the job. */
static void open_device(ethx_shmem_state* state) {
  ethx_shmem_ls* ls = &ethx_shmem_g_ls;
  char error[256];
  ls->dev = ethx_dev_open_gpu((uint32_t)state->me, error, sizeof error);
  if (ls->dev == NULL) ethx_shmem_fatal("GPU %d: %s", state->me, error);
  ethx_dev_info info;
  ethx_dev_get_info(ls->dev, &info);
  if (info.register_map_version < 3) {
    ethx_shmem_fatal("GPU %d speaks register map %u; shmem_quiet needs FLUSH (map 3)", state->me,
                     info.register_map_version);
  }
  if (info.gpu_count < (uint32_t)state->npes) {
    ethx_shmem_fatal("%d PEs need %d GPUs; the fabric has %u", state->npes, state->npes,
                     info.gpu_count);
  }
  if (ethx_dev_lock(ls->dev, -1) != 0) {
    ethx_shmem_fatal("GPU %d: %s", state->me, ethx_dev_last_error(ls->dev));
  }
  uint64_t window_bytes = 0;
  state->memory = ethx_dev_hbm(ls->dev, &state->memory_bytes);
  ls->window = ethx_dev_window(ls->dev, &window_bytes);
  if (state->memory == NULL || ls->window == NULL) {
    ethx_shmem_fatal("GPU %d: %s", state->me, ethx_dev_last_error(ls->dev));
  }
  ls->aperture_bytes = info.aperture_bytes;
}

static int open_hbm_resource(const ethx_dev* dev) {
  ethx_dev_info info;
  ethx_dev_get_info(dev, &info);
  const char* root = getenv("ETHX_SYSFS_PCI_DEVICES");
  char path[512];
  snprintf(path, sizeof path, "%s/%s/resource%d",
           root != NULL && *root != '\0' ? root : "/sys/bus/pci/devices", info.bdf,
           ETHX_GPU_HBM_BAR);
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) ethx_shmem_fatal("%s: %s", path, strerror(errno));
  return fd;
}

/* Copies the data segment's pages into HBM at `offset`, then maps HBM over them at the same
 * addresses: the program's globals keep their addresses and values and become remotely
 * reachable. */
static ethx_shmem_region move_data_segment(uint64_t offset, uint64_t hbm_limit) {
  ethx_shmem_region region = {0, 0, offset};
  ethx_shmem_find_data_segment(&region.base, &region.bytes);
  if (region.bytes == 0) return region; /* no globals to move */
  if (offset + region.bytes > hbm_limit) {
    ethx_shmem_fatal(
        "the program's data segment (%zu KiB of globals) does not fit in the GPU's "
        "memory (%" PRIu64 " MiB)",
        region.bytes >> 10, hbm_limit >> 20);
  }
  ethx_shmem_state* state = &ethx_shmem_g_state;
  memcpy(state->memory + offset, (const void*)region.base, region.bytes);
  const int fd = open_hbm_resource(ethx_shmem_g_ls.dev);
  void* mapped = mmap((void*)region.base, region.bytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_FIXED, fd, (off_t)offset);
  close(fd);
  if (mapped == MAP_FAILED) {
    ethx_shmem_fatal("mapping the GPU's memory over the data segment: %s", strerror(errno));
  }
  return region;
}

/* The heap gets SHMEM_SYMMETRIC_SIZE bytes (default: all of HBM the library leaves). */
static void ls_init(ethx_shmem_state* state) {
  open_device(state);
  state->data = move_data_segment(ETHX_SHMEM_DATA_OFFSET, state->memory_bytes);
  uint64_t heap_offset = 0;
  size_t heap_bytes = 0;
  ethx_shmem_plan_heap(state, state->memory_bytes, UINT64_MAX, "the GPU's memory (HBM)",
                       &heap_offset, &heap_bytes);
  ethx_shmem_heap_init(heap_offset, heap_bytes);
}

/* The data segment stays mapped: the program's globals live there until it exits. */
static void ls_finalize(ethx_shmem_state* state) {
  (void)state;
  ethx_dev_unlock(ethx_shmem_g_ls.dev);
}

static uint64_t ls_atomic(enum ethx_shmem_atomic_op op, uint64_t offset, unsigned width,
                          uint64_t operand, uint64_t compare, int pe) {
  static const int kDeviceOp[] = {
      [ETHX_ATOMIC_FETCH_ADD] = ETHX_GPU_FETCH_ADD,
      [ETHX_ATOMIC_SWAP] = ETHX_GPU_SWAP,
      [ETHX_ATOMIC_COMPARE_SWAP] = ETHX_GPU_COMPARE_SWAP,
  };
  const uint64_t window_addr = ethx_shmem_ls_window_addr(pe, offset);
  uint64_t old = 0;
  const int status = ethx_dev_atomic(ethx_shmem_g_ls.dev, kDeviceOp[op], window_addr, width,
                                     operand, compare, &old);
  if (status != ETHX_GPU_OK) {
    char what[96];
    snprintf(what, sizeof what, "shmem atomic at window address 0x%" PRIx64, window_addr);
    ethx_shmem_ls_check(what, status);
  }
  return old;
}

/* One read of FLUSH: every store this GPU posted is performed at its target. */
static void ls_quiet(void) {
  const int status = ethx_dev_flush(ethx_shmem_g_ls.dev);
  if (!ethx_shmem_g_state.exiting) ethx_shmem_ls_check("shmem_quiet", status);
}

/* Stores to one PE already arrive in order (go-back-N per pair, docs/reliability.md), but a
 * copy-engine put and a store are issued by different parts of the device: fence is quiet. */
static void ls_fence(void) {
  ls_quiet();
}

static void ls_store_flag(int pe, uint64_t offset, uint64_t value) {
  *(volatile uint64_t*)ethx_shmem_ls_window_ptr(pe, offset) = value;
}

/* A window pointer: every load and store through it is one fabric access. */
static void* ls_ptr(uint64_t offset, int pe) {
  return (void*)(uintptr_t)ethx_shmem_ls_window_ptr(pe, offset);
}

const ethx_shmem_backend ethx_shmem_backend_load_store = {
    .name = "load-store",
    .init = ls_init,
    .finalize = ls_finalize,
    .put = ethx_shmem_ls_put,
    .get = ethx_shmem_ls_get,
    .put_value = ethx_shmem_ls_put_value,
    .get_value = ethx_shmem_ls_get_value,
    .atomic = ls_atomic,
    .quiet = ls_quiet,
    .fence = ls_fence,
    .store_flag = ls_store_flag,
    .ptr = ls_ptr,
};
