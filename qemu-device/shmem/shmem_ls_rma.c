/* Load-store RMA: plain loads and stores through the window for small transfers, the copy
 * engine for large ones (thresholds in ethx_shmem_state, measured in docs/shmem.md). The core
 * (shmem_rma.c) has checked the arguments and done the own PE's transfers. */
#include <inttypes.h>
#include <string.h>

#include "shmem_core.h"
#include "shmem_layout.h"
#include "shmem_ls.h"

/* The widest access (8, 4, 2, 1 bytes) that `address` is aligned for and `bytes` still
 * allows: the device carries naturally aligned 1/2/4/8-byte accesses. */
static unsigned access_width(uintptr_t address, size_t bytes) {
  for (unsigned width = 8; width > 1; width /= 2) {
    if (address % width == 0 && bytes >= width) return width;
  }
  return 1;
}

static void store_one(volatile void* at, unsigned width, uint64_t value) {
  switch (width) {
    case 8:
      *(volatile uint64_t*)at = value;
      break;
    case 4:
      *(volatile uint32_t*)at = (uint32_t)value;
      break;
    case 2:
      *(volatile uint16_t*)at = (uint16_t)value;
      break;
    default:
      *(volatile uint8_t*)at = (uint8_t)value;
      break;
  }
}

/* A failed load reads all-ones: only then is ERROR worth a register read. */
static uint64_t checked_load(const volatile void* at, unsigned width, const char* what) {
  const uint64_t value = ethx_shmem_load_one(at, width);
  const uint64_t all_ones = width == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * width)) - 1;
  if (value == all_ones) {
    ethx_dev_fault fault = {0, 0};
    const int status = ethx_dev_take_error(ethx_shmem_g_ls.dev, &fault);
    if (status != ETHX_GPU_OK) {
      ethx_shmem_fatal("%s: %s (window address 0x%" PRIx64 ")", what, ethx_dev_status_name(status),
                       fault.fault_addr);
    }
  }
  return value;
}

static void store_span(volatile uint8_t* to, const uint8_t* from, size_t bytes) {
  while (bytes > 0) {
    const unsigned width = access_width((uintptr_t)to, bytes);
    uint64_t value = 0;
    memcpy(&value, from, width);
    store_one(to, width, value);
    to += width;
    from += width;
    bytes -= width;
  }
}

static void load_span(uint8_t* to, const volatile uint8_t* from, size_t bytes) {
  while (bytes > 0) {
    const unsigned width = access_width((uintptr_t)from, bytes);
    const uint64_t value = checked_load(from, width, "shmem get");
    memcpy(to, &value, width);
    to += width;
    from += width;
    bytes -= width;
  }
}

static void copy_engine(uint64_t src, uint64_t dst, size_t bytes, const char* what) {
  ethx_shmem_ls_check(what, ethx_dev_copy(ethx_shmem_g_ls.dev, src, dst, bytes, 0));
}

/* Remote put through the copy engine: from the source's own place in HBM if it is symmetric,
 * else through this PE's staging buffer. */
static void put_by_copy(uint64_t dest_offset, const void* src, size_t bytes, int pe) {
  const ethx_shmem_state* state = &ethx_shmem_g_state;
  const uint64_t src_offset = ethx_shmem_offset_of(src, bytes);
  const uint64_t dest = ethx_shmem_ls_window_addr(pe, dest_offset);
  if (src_offset != UINT64_MAX) {
    copy_engine(ethx_shmem_ls_window_addr(state->me, src_offset), dest, bytes, "shmem put");
    return;
  }
  const uint64_t staging = ethx_shmem_ls_window_addr(state->me, ETHX_SHMEM_STAGING_OFFSET);
  for (size_t done = 0; done < bytes;) {
    const size_t chunk =
        bytes - done < ETHX_SHMEM_STAGING_BYTES ? bytes - done : ETHX_SHMEM_STAGING_BYTES;
    memcpy(state->memory + ETHX_SHMEM_STAGING_OFFSET, (const uint8_t*)src + done, chunk);
    copy_engine(staging, dest + done, chunk, "shmem put");
    done += chunk;
  }
}

static void get_by_copy(void* dest, uint64_t src_offset, size_t bytes, int pe) {
  const ethx_shmem_state* state = &ethx_shmem_g_state;
  const uint64_t dest_offset = ethx_shmem_offset_of(dest, bytes);
  const uint64_t src = ethx_shmem_ls_window_addr(pe, src_offset);
  if (dest_offset != UINT64_MAX) {
    copy_engine(src, ethx_shmem_ls_window_addr(state->me, dest_offset), bytes, "shmem get");
    return;
  }
  const uint64_t staging = ethx_shmem_ls_window_addr(state->me, ETHX_SHMEM_STAGING_OFFSET);
  for (size_t done = 0; done < bytes;) {
    const size_t chunk =
        bytes - done < ETHX_SHMEM_STAGING_BYTES ? bytes - done : ETHX_SHMEM_STAGING_BYTES;
    copy_engine(src + done, staging, chunk, "shmem get");
    memcpy((uint8_t*)dest + done, state->memory + ETHX_SHMEM_STAGING_OFFSET, chunk);
    done += chunk;
  }
}

void ethx_shmem_ls_put(uint64_t dest_offset, const void* src, size_t bytes, int pe) {
  if (bytes >= ethx_shmem_g_state.put_copy_min_bytes) {
    put_by_copy(dest_offset, src, bytes, pe);
  } else {
    store_span(ethx_shmem_ls_window_ptr(pe, dest_offset), src, bytes);
  }
}

void ethx_shmem_ls_get(void* dest, uint64_t src_offset, size_t bytes, int pe) {
  if (bytes >= ethx_shmem_g_state.get_copy_min_bytes) {
    get_by_copy(dest, src_offset, bytes, pe);
  } else {
    load_span(dest, ethx_shmem_ls_window_ptr(pe, src_offset), bytes);
  }
}

void ethx_shmem_ls_put_value(uint64_t dest_offset, uint64_t value, unsigned width, int pe) {
  store_one(ethx_shmem_ls_window_ptr(pe, dest_offset), width, value);
}

uint64_t ethx_shmem_ls_get_value(uint64_t src_offset, unsigned width, int pe) {
  return checked_load(ethx_shmem_ls_window_ptr(pe, src_offset), width, "shmem g");
}
