/* The copy engine (COPY_*): window address to window address, polled. */
#include "sdk_internal.h"

/* Spin on COPY_STATUS this long (small copies end within it), then poll every 20 us. */
#define ETHX_SDK_COPY_SPIN_NS 1000000
#define ETHX_SDK_COPY_NAP_NS 20000
#define ETHX_SDK_COPY_DEFAULT_TIMEOUT_NS INT64_C(30000000000)

static int range_ok(uint64_t window_bytes, uint64_t addr, uint64_t bytes) {
  return addr <= window_bytes && bytes <= window_bytes - addr;
}

static int start_copy(ethx_dev* dev, uint64_t src, uint64_t dst, uint64_t bytes) {
  if (!range_ok(dev->info.window_bytes, src, bytes) ||
      !range_ok(dev->info.window_bytes, dst, bytes)) {
    return ethx_sdk_fail(dev, ETHX_DEV_EINVAL,
                         "GPU %s: copy of %llu bytes from 0x%llx to 0x%llx: outside the "
                         "%llu-byte window",
                         dev->bdf, (unsigned long long)bytes, (unsigned long long)src,
                         (unsigned long long)dst, (unsigned long long)dev->info.window_bytes);
  }
  const uint32_t before = (uint32_t)ETHX_SDK_READ(dev, COPY_STATUS);
  if ((before & ETHX_COPY_STATUS_STATE_MASK) == ETHX_COPY_BUSY) {
    return ethx_sdk_fail(dev, ETHX_DEV_EBUSY,
                         "GPU %s: the copy engine is busy before the start (a copy started "
                         "without the lock, or one that timed out, still runs)",
                         dev->bdf);
  }
  ETHX_SDK_WRITE(dev, COPY_SRC, src);
  ETHX_SDK_WRITE(dev, COPY_DST, dst);
  ETHX_SDK_WRITE(dev, COPY_LEN, bytes);
  ETHX_SDK_WRITE(dev, COPY_CMD, ETHX_COPY_CMD_START); /* no interrupt: the caller polls */
  dev->copy_started = 1;
  return ETHX_GPU_OK;
}

int ethx_dev_copy_start(ethx_dev* dev, uint64_t src, uint64_t dst, uint64_t bytes) {
  if (dev == NULL) return ETHX_DEV_EINVAL;
  if (!dev->lock.held) {
    return ethx_sdk_fail(dev, ETHX_DEV_EINVAL,
                         "GPU %s: ethx_dev_copy_start needs the command registers' lock "
                         "(ethx_dev_lock) held until the copy is polled done",
                         dev->bdf);
  }
  return start_copy(dev, src, dst, bytes);
}

int ethx_dev_copy_poll(ethx_dev* dev, int* status) {
  if (dev == NULL) return ETHX_DEV_EINVAL;
  const uint32_t copy_status = (uint32_t)ETHX_SDK_READ(dev, COPY_STATUS);
  const uint32_t state = copy_status & ETHX_COPY_STATUS_STATE_MASK;
  if (state == ETHX_COPY_BUSY) return 1;
  const uint32_t code = (copy_status >> ETHX_COPY_STATUS_CODE_SHIFT) & ETHX_COPY_STATUS_CODE_MASK;
  const int started = dev->copy_started;
  dev->copy_started = 0;
  int result = ETHX_GPU_OK;
  if (state == ETHX_COPY_IDLE && started) {
    /* The doorbell sets BUSY before it returns, unless the device refused the start. */
    result = ethx_sdk_fail(dev, ETHX_DEV_EBUSY,
                           "GPU %s: the copy engine refused the start (ERROR 0x%x: another "
                           "copy still runs in the device)",
                           dev->bdf, (unsigned)ETHX_SDK_READ(dev, ERROR));
  } else if (state == ETHX_COPY_FAILED) {
    result = code != ETHX_GPU_OK && code < ETHX_GPU_STATUS_COUNT ? (int)code : ETHX_GPU_INTERNAL;
    ethx_sdk_fail(dev, result, "GPU %s: copy failed: %s (COPY_STATUS 0x%x, FAULT_ADDR 0x%llx)",
                  dev->bdf, ethx_dev_status_name(result), copy_status,
                  (unsigned long long)ETHX_SDK_READ(dev, FAULT_ADDR));
  }
  if (status != NULL) *status = result;
  return 0;
}

/* Polls the started copy until it ends or timeout_ns passes. */
static int wait_copy(ethx_dev* dev, uint64_t bytes, int64_t timeout_ns) {
  const int64_t start_ns = ethx_sdk_now_ns();
  for (;;) {
    int status = ETHX_GPU_OK;
    if (ethx_dev_copy_poll(dev, &status) == 0) return status;
    const int64_t elapsed_ns = ethx_sdk_now_ns() - start_ns;
    if (elapsed_ns > timeout_ns) {
      return ethx_sdk_fail(dev, ETHX_DEV_ETIMEDOUT,
                           "GPU %s: copy of %llu bytes did not finish within %lld ms (it goes "
                           "on; the engine stays busy until it ends)",
                           dev->bdf, (unsigned long long)bytes, (long long)(timeout_ns / 1000000));
    }
    if (elapsed_ns > ETHX_SDK_COPY_SPIN_NS) ethx_sdk_sleep_ns(ETHX_SDK_COPY_NAP_NS);
  }
}

int ethx_dev_copy(ethx_dev* dev, uint64_t src, uint64_t dst, uint64_t bytes, int64_t timeout_ns) {
  if (dev == NULL) return ETHX_DEV_EINVAL;
  if (bytes == 0) return ETHX_GPU_OK;
  if (timeout_ns <= 0) timeout_ns = ETHX_SDK_COPY_DEFAULT_TIMEOUT_NS;
  int taken = 0;
  int status = ethx_sdk_command_begin(dev, &taken);
  if (status != ETHX_GPU_OK) return status;
  status = start_copy(dev, src, dst, bytes);
  if (status == ETHX_GPU_OK) status = wait_copy(dev, bytes, timeout_ns);
  ethx_sdk_command_end(dev, taken);
  return status;
}
