/* Values and counts for the public API (shmem_api.h). */
#include <string.h>

#include "shmem_api.h"

/* Through the exact-width type of the value's size, so the value lands in the low bytes of
 * the uint64_t on either byte order (a plain memcpy into a uint64_t would not). */
uint64_t ethx_api_load_bits(const void* value, size_t bytes) {
  switch (bytes) {
    case 1: {
      uint8_t v;
      memcpy(&v, value, sizeof v);
      return v;
    }
    case 2: {
      uint16_t v;
      memcpy(&v, value, sizeof v);
      return v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, value, sizeof v);
      return v;
    }
    case 8: {
      uint64_t v;
      memcpy(&v, value, sizeof v);
      return v;
    }
    default:
      ethx_shmem_fatal("internal: a %zu-byte value has no single-element form", bytes);
  }
}

void ethx_api_store_bits(void* value, uint64_t bits, size_t bytes) {
  switch (bytes) {
    case 1: {
      uint8_t v = (uint8_t)bits;
      memcpy(value, &v, sizeof v);
      return;
    }
    case 2: {
      uint16_t v = (uint16_t)bits;
      memcpy(value, &v, sizeof v);
      return;
    }
    case 4: {
      uint32_t v = (uint32_t)bits;
      memcpy(value, &v, sizeof v);
      return;
    }
    case 8:
      memcpy(value, &bits, sizeof bits);
      return;
    default:
      ethx_shmem_fatal("internal: a %zu-byte value has no single-element form", bytes);
  }
}

size_t ethx_api_bytes(size_t nelems, size_t elem_bytes, const char* fn) {
  if (elem_bytes != 0 && nelems > SIZE_MAX / elem_bytes) {
    ethx_shmem_fatal("%s: nelems %zu of %zu bytes each is more than memory holds", fn, nelems,
                     elem_bytes);
  }
  return nelems * elem_bytes;
}

size_t ethx_api_count(int count, const char* field, const char* fn) {
  if (count < 0) {
    ethx_shmem_fatal("%s: %s %d is negative", fn, field, count);
  }
  return (size_t)count;
}
