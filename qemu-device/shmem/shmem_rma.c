/* Puts and gets: checks, the own PE's transfers (memmove), and the backend for other PEs
 * (shmem_backend.h). */
#include <string.h>

#include "shmem_core.h"
#include "shmem_layout.h"

uint64_t ethx_shmem_load_one(const volatile void* at, unsigned width) {
  switch (width) {
    case 8:
      return *(const volatile uint64_t*)at;
    case 4:
      return *(const volatile uint32_t*)at;
    case 2:
      return *(const volatile uint16_t*)at;
    default:
      return *(const volatile uint8_t*)at;
  }
}

static uint64_t symmetric_offset(const void* addr, size_t bytes, const char* what) {
  const uint64_t offset = ethx_shmem_offset_of(addr, bytes);
  if (offset == UINT64_MAX) {
    ethx_shmem_fatal(
        "%s: %p (%zu bytes) is not symmetric (neither the symmetric heap nor a "
        "global or static variable of the program)",
        what, addr, bytes);
  }
  return offset;
}

void ethx_shmem_put_bytes(void* dest, const void* src, size_t bytes, int pe) {
  if (bytes == 0) return;
  const uint64_t offset = symmetric_offset(dest, bytes, "shmem put: dest");
  if (pe == ethx_shmem_g_state.me) {
    memmove(dest, src, bytes);
  } else {
    ethx_shmem_g_state.backend->put(offset, src, bytes, pe);
  }
}

void ethx_shmem_get_bytes(void* dest, const void* src, size_t bytes, int pe) {
  if (bytes == 0) return;
  const uint64_t offset = symmetric_offset(src, bytes, "shmem get: source");
  if (pe == ethx_shmem_g_state.me) {
    memmove(dest, src, bytes);
  } else {
    ethx_shmem_g_state.backend->get(dest, offset, bytes, pe);
  }
}

void ethx_shmem_put_value(void* dest, uint64_t value, unsigned width, int pe) {
  const uint64_t offset = symmetric_offset(dest, width, "shmem p: dest");
  if (pe == ethx_shmem_g_state.me || (uintptr_t)dest % width != 0) {
    ethx_shmem_put_bytes(dest, &value, width, pe); /* little-endian: the low bytes */
    return;
  }
  ethx_shmem_g_state.backend->put_value(offset, value, width, pe);
}

uint64_t ethx_shmem_get_value(const void* src, unsigned width, int pe) {
  const uint64_t offset = symmetric_offset(src, width, "shmem g: source");
  if (pe == ethx_shmem_g_state.me || (uintptr_t)src % width != 0) {
    uint64_t value = 0;
    ethx_shmem_get_bytes(&value, src, width, pe);
    return value;
  }
  return ethx_shmem_g_state.backend->get_value(offset, width, pe);
}
