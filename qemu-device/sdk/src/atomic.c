/* Atomics through the command registers (ATOMIC_*), under the GPU's lock. */
#include "sdk_internal.h"

static int check_atomic(ethx_dev* dev, int op, uint64_t addr, unsigned width) {
  const char* bad = NULL;
  if (op != ETHX_GPU_FETCH_ADD && op != ETHX_GPU_SWAP && op != ETHX_GPU_COMPARE_SWAP) {
    bad = "op is not ETHX_GPU_FETCH_ADD, ETHX_GPU_SWAP or ETHX_GPU_COMPARE_SWAP";
  } else if (width != 4 && width != 8) {
    bad = "atomics are 4 or 8 bytes wide";
  } else if (addr % width != 0) {
    bad = "not aligned to its width";
  } else if (!ethx_sdk_access_ok(dev->info.window_bytes, addr, width)) {
    bad = "outside the window";
  }
  if (bad == NULL) return ETHX_GPU_OK;
  return ethx_sdk_fail(dev, ETHX_DEV_EINVAL,
                       "GPU %s: atomic %d of %u bytes at window address 0x%llx: %s", dev->bdf, op,
                       width, (unsigned long long)addr, bad);
}

int ethx_dev_atomic(ethx_dev* dev, int op, uint64_t window_addr, unsigned width, uint64_t operand,
                    uint64_t compare, uint64_t* old_value) {
  if (old_value != NULL) *old_value = UINT64_MAX;
  if (dev == NULL) return ETHX_DEV_EINVAL;
  int status = check_atomic(dev, op, window_addr, width);
  int taken = 0;
  if (status == ETHX_GPU_OK) status = ethx_sdk_command_begin(dev, &taken);
  if (status != ETHX_GPU_OK) return status;
  ETHX_SDK_WRITE(dev, ATOMIC_ADDR, window_addr);
  ETHX_SDK_WRITE(dev, ATOMIC_OPERAND, operand);
  if (op == ETHX_GPU_COMPARE_SWAP) ETHX_SDK_WRITE(dev, ATOMIC_COMPARE, compare);
  /* The doorbell's write returns when the atomic has completed. */
  ETHX_SDK_WRITE(dev, ATOMIC_CMD, ETHX_ATOMIC_CMD((unsigned)op, width));
  const uint64_t result = ETHX_SDK_READ(dev, ATOMIC_RESULT);
  const uint32_t code = (uint32_t)ETHX_SDK_READ(dev, ATOMIC_STATUS);
  ethx_sdk_command_end(dev, taken);
  status = code < ETHX_GPU_STATUS_COUNT ? (int)code : ETHX_GPU_INTERNAL;
  if (old_value != NULL) *old_value = status == ETHX_GPU_OK ? result : UINT64_MAX;
  if (status == ETHX_GPU_OK) return ETHX_GPU_OK;
  return ethx_sdk_fail(dev, status,
                       "GPU %s: atomic %d of %u bytes at window address 0x%llx failed: %s "
                       "(ATOMIC_STATUS %u)",
                       dev->bdf, op, width, (unsigned long long)window_addr,
                       ethx_dev_status_name(status), code);
}
