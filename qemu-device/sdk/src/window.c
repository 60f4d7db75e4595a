/*
 * Window loads and stores (BAR 4), each one access of its width, and FLUSH.
 *
 * A failed load reads all-ones, and the device latches the failure in ERROR. So an all-ones
 * value costs one more register read: ERROR tells a failure from a real all-ones word (an error
 * latched earlier and not yet taken counts as this load's: take errors before relying on
 * all-ones data). Other values cost nothing extra.
 */
#include "sdk_internal.h"

/* Why [addr, addr + width) is not a window access, or NULL if it is one. */
static const char* bad_access(const ethx_dev* dev, uint64_t addr, unsigned width) {
  if (dev->window.base == NULL) return "this handle has no window mapped";
  if (addr % width != 0) return "not aligned to its width";
  if (!ethx_sdk_access_ok(dev->window.bytes, addr, width)) return "outside the window";
  return NULL;
}

static int window_load(ethx_dev* dev, uint64_t addr, unsigned width, uint64_t* value) {
  if (dev == NULL || value == NULL) return ETHX_DEV_EINVAL;
  const uint64_t all_ones = ethx_sdk_all_ones(width);
  const char* bad = bad_access(dev, addr, width);
  if (bad != NULL) {
    *value = all_ones;
    return ethx_sdk_fail(
        dev, ETHX_DEV_EINVAL, "GPU %s: load of %u bytes at window address 0x%llx: %s (%llu bytes)",
        dev->bdf, width, (unsigned long long)addr, bad, (unsigned long long)dev->window.bytes);
  }
  *value = ethx_sdk_mmio_read(dev->window.base, addr, width);
  if (*value != all_ones) return ETHX_GPU_OK;
  /* A copy started while busy says nothing about this load. */
  const uint32_t bits = (uint32_t)ETHX_SDK_READ(dev, ERROR) & ~(uint32_t)ETHX_ERROR_COPY_BUSY;
  const int status = ethx_sdk_status_of_error_bits(bits);
  if (status == ETHX_GPU_OK) return ETHX_GPU_OK;
  return ethx_sdk_fail(dev, status,
                       "GPU %s: load of %u bytes at window address 0x%llx failed: %s (ERROR "
                       "0x%x, FAULT_ADDR 0x%llx)",
                       dev->bdf, width, (unsigned long long)addr, ethx_dev_status_name(status),
                       bits, (unsigned long long)ETHX_SDK_READ(dev, FAULT_ADDR));
}

static int window_store(ethx_dev* dev, uint64_t addr, unsigned width, uint64_t value) {
  if (dev == NULL) return ETHX_DEV_EINVAL;
  const char* bad = bad_access(dev, addr, width);
  if (bad != NULL) {
    return ethx_sdk_fail(
        dev, ETHX_DEV_EINVAL, "GPU %s: store of %u bytes at window address 0x%llx: %s (%llu bytes)",
        dev->bdf, width, (unsigned long long)addr, bad, (unsigned long long)dev->window.bytes);
  }
  ethx_sdk_mmio_write(dev->window.base, addr, width, value);
  return ETHX_GPU_OK;
}

int ethx_dev_load8(ethx_dev* dev, uint64_t window_addr, uint8_t* value) {
  if (value == NULL) return ETHX_DEV_EINVAL;
  uint64_t wide = 0;
  const int status = window_load(dev, window_addr, 1, &wide);
  *value = (uint8_t)wide;
  return status;
}

int ethx_dev_load16(ethx_dev* dev, uint64_t window_addr, uint16_t* value) {
  if (value == NULL) return ETHX_DEV_EINVAL;
  uint64_t wide = 0;
  const int status = window_load(dev, window_addr, 2, &wide);
  *value = (uint16_t)wide;
  return status;
}

int ethx_dev_load32(ethx_dev* dev, uint64_t window_addr, uint32_t* value) {
  if (value == NULL) return ETHX_DEV_EINVAL;
  uint64_t wide = 0;
  const int status = window_load(dev, window_addr, 4, &wide);
  *value = (uint32_t)wide;
  return status;
}

int ethx_dev_load64(ethx_dev* dev, uint64_t window_addr, uint64_t* value) {
  return window_load(dev, window_addr, 8, value);
}

int ethx_dev_store8(ethx_dev* dev, uint64_t window_addr, uint8_t value) {
  return window_store(dev, window_addr, 1, value);
}

int ethx_dev_store16(ethx_dev* dev, uint64_t window_addr, uint16_t value) {
  return window_store(dev, window_addr, 2, value);
}

int ethx_dev_store32(ethx_dev* dev, uint64_t window_addr, uint32_t value) {
  return window_store(dev, window_addr, 4, value);
}

int ethx_dev_store64(ethx_dev* dev, uint64_t window_addr, uint64_t value) {
  return window_store(dev, window_addr, 8, value);
}

int ethx_dev_flush(ethx_dev* dev) {
  if (dev == NULL) return ETHX_DEV_EINVAL;
  if (dev->info.register_map_version < 3) {
    return ethx_sdk_fail(dev, ETHX_DEV_EVERSION,
                         "GPU %s speaks register map version %u; ethx_dev_flush needs FLUSH "
                         "(version 3): rebuild QEMU (qemu-device/build-qemu.sh)",
                         dev->bdf, dev->info.register_map_version);
  }
  const uint32_t read = (uint32_t)ETHX_SDK_READ(dev, FLUSH);
  const int status = read < ETHX_GPU_STATUS_COUNT ? (int)read : ETHX_GPU_INTERNAL;
  if (status == ETHX_GPU_OK) return ETHX_GPU_OK;
  return ethx_sdk_fail(dev, status, "GPU %s: flush failed: %s (FLUSH 0x%x, FAULT_ADDR 0x%llx)",
                       dev->bdf, ethx_dev_status_name(status), read,
                       (unsigned long long)ETHX_SDK_READ(dev, FAULT_ADDR));
}
