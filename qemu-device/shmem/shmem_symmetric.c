/* Symmetric addresses: the program's data segment, the heap and the library's memory, and
 * where a symmetric object is on another PE (its symmetric offset, shmem_layout.h). */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdint.h>
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

void ethx_shmem_find_data_segment(uintptr_t* base, size_t* bytes) {
  segment found = {0, 0};
  dl_iterate_phdr(find_writable_segment, &found);
  *base = 0;
  *bytes = 0;
  if (found.start == 0) return; /* no globals */
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  *base = found.start & ~(page - 1);
  *bytes = ((found.end + page - 1) & ~(page - 1)) - *base;
}

static uint64_t offset_in(const ethx_shmem_region* region, uintptr_t addr, size_t bytes) {
  if (addr < region->base || addr - region->base > region->bytes ||
      bytes > region->bytes - (addr - region->base)) {
    return UINT64_MAX;
  }
  return region->offset + (addr - region->base);
}

uint64_t ethx_shmem_offset_of(const void* addr, size_t bytes) {
  const ethx_shmem_state* state = &ethx_shmem_g_state;
  const uintptr_t at = (uintptr_t)addr;
  const uint64_t in_heap = offset_in(&state->heap, at, bytes);
  if (in_heap != UINT64_MAX) return in_heap;
  const uint64_t in_data = offset_in(&state->data, at, bytes);
  if (in_data != UINT64_MAX) return in_data;
  /* The library's own symmetric memory: control flags, collectives' scratch. */
  const ethx_shmem_region library = {(uintptr_t)state->memory, ETHX_SHMEM_DATA_OFFSET, 0};
  return offset_in(&library, at, bytes);
}

void* ethx_shmem_local_addr(uint64_t offset) {
  const ethx_shmem_region* data = &ethx_shmem_g_state.data;
  if (offset >= data->offset && offset - data->offset < data->bytes) {
    return (void*)(data->base + (offset - data->offset));
  }
  return ethx_shmem_g_state.memory + offset;
}

int ethx_shmem_is_symmetric(const void* addr, size_t bytes) {
  return ethx_shmem_offset_of(addr, bytes) != UINT64_MAX;
}

void* shmem_ptr(const void* dest, int pe) {
  ethx_shmem_require_init("shmem_ptr");
  if (pe < 0 || pe >= ethx_shmem_g_state.npes) return NULL;
  const uint64_t offset = ethx_shmem_offset_of(dest, 1);
  if (offset == UINT64_MAX) return NULL;
  if (pe == ethx_shmem_g_state.me) return (void*)(uintptr_t)dest;
  return ethx_shmem_g_state.backend->ptr(offset, pe);
}
