/* Symmetric addresses: the data segment moved into HBM, and where a symmetric object is on
 * another PE. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shmem_core.h"
#include "shmem_layout.h"

typedef struct segment {
  uintptr_t start;
  uintptr_t end;
} segment;

/* The main program is the first object dl_iterate_phdr reports; its writable PT_LOAD holds
 * .data, .bss (and the GOT, copy-relocated library variables such as stdout). */
static int find_writable_segment(struct dl_phdr_info* info, size_t size, void* out) {
  (void)size;
  segment* found = out;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* header = &info->dlpi_phdr[i];
    if (header->p_type != PT_LOAD || (header->p_flags & PF_W) == 0) continue;
    found->start = info->dlpi_addr + header->p_vaddr;
    found->end = found->start + header->p_memsz;
    break;
  }
  return 1; /* the main program only */
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

/* Copies the segment's pages into HBM, then maps HBM over them at the same addresses: the
 * program's globals keep their addresses and values and become remotely reachable. */
ethx_shmem_region ethx_shmem_move_data_segment(uint64_t hbm_offset, uint64_t hbm_limit) {
  segment found = {0, 0};
  dl_iterate_phdr(find_writable_segment, &found);
  ethx_shmem_region region = {0, 0, hbm_offset};
  if (found.start == 0) return region; /* no globals to move */
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  region.base = found.start & ~(page - 1);
  region.bytes = ((found.end + page - 1) & ~(page - 1)) - region.base;
  if (hbm_offset + region.bytes > hbm_limit) {
    ethx_shmem_fatal(
        "the program's data segment (%zu KiB of globals) does not fit in the GPU's "
        "memory (%" PRIu64 " MiB)",
        region.bytes >> 10, hbm_limit >> 20);
  }
  ethx_shmem_state* state = &ethx_shmem_g_state;
  memcpy(state->hbm + hbm_offset, (const void*)region.base, region.bytes);
  const int fd = open_hbm_resource(state->dev);
  void* mapped = mmap((void*)region.base, region.bytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_FIXED, fd, (off_t)hbm_offset);
  close(fd);
  if (mapped == MAP_FAILED) {
    ethx_shmem_fatal("mapping the GPU's memory over the data segment: %s", strerror(errno));
  }
  return region;
}

static uint64_t offset_in(const ethx_shmem_region* region, uintptr_t addr, size_t bytes) {
  if (addr < region->base || addr - region->base > region->bytes ||
      bytes > region->bytes - (addr - region->base)) {
    return UINT64_MAX;
  }
  return region->hbm_offset + (addr - region->base);
}

uint64_t ethx_shmem_offset_of(const void* addr, size_t bytes) {
  const ethx_shmem_state* state = &ethx_shmem_g_state;
  const uintptr_t at = (uintptr_t)addr;
  const uint64_t in_heap = offset_in(&state->heap, at, bytes);
  if (in_heap != UINT64_MAX) return in_heap;
  const uint64_t in_data = offset_in(&state->data, at, bytes);
  if (in_data != UINT64_MAX) return in_data;
  /* The library's own symmetric memory: control flags, collectives' scratch. */
  const ethx_shmem_region library = {(uintptr_t)state->hbm, ETHX_SHMEM_DATA_OFFSET, 0};
  return offset_in(&library, at, bytes);
}

int ethx_shmem_is_symmetric(const void* addr, size_t bytes) {
  return ethx_shmem_offset_of(addr, bytes) != UINT64_MAX;
}

uint64_t ethx_shmem_window_addr(int pe, uint64_t offset) {
  return (uint64_t)pe * ethx_shmem_g_state.aperture_bytes + offset;
}

volatile void* ethx_shmem_window_ptr(int pe, uint64_t offset) {
  return ethx_shmem_g_state.window + ethx_shmem_window_addr(pe, offset);
}

void* shmem_ptr(const void* dest, int pe) {
  ethx_shmem_require_init("shmem_ptr");
  if (pe < 0 || pe >= ethx_shmem_g_state.npes) return NULL;
  const uint64_t offset = ethx_shmem_offset_of(dest, 1);
  if (offset == UINT64_MAX) return NULL;
  if (pe == ethx_shmem_g_state.me) return (void*)(uintptr_t)dest;
  /* A window pointer: every load and store through it is one fabric access. */
  return (void*)(uintptr_t)ethx_shmem_window_ptr(pe, offset);
}
