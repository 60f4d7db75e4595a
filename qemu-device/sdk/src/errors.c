/* Status names, the handle's last error, latched device errors and the counters. */
#include <stdarg.h>
#include <stdio.h>

#include "sdk_internal.h"

int ethx_sdk_fail(ethx_dev* dev, int code, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(dev->last_error, sizeof dev->last_error, format, args);
  va_end(args);
  return code;
}

void ethx_sdk_report(char* error, size_t error_bytes, const char* format, ...) {
  if (error == NULL || error_bytes == 0) return;
  va_list args;
  va_start(args, format);
  vsnprintf(error, error_bytes, format, args);
  va_end(args);
}

const char* ethx_dev_last_error(const ethx_dev* dev) {
  return dev == NULL ? "no device (NULL handle)" : dev->last_error;
}

const char* ethx_dev_status_name(int status) {
  /* The device's codes read as the host library names them (ethx_gpu_status_name). */
  static const char* const device_names[ETHX_GPU_STATUS_COUNT] = {
      [ETHX_GPU_OK] = "ok",
      [ETHX_GPU_OUT_OF_WINDOW] = "out of window",
      [ETHX_GPU_NO_RIGHTS] = "no rights",
      [ETHX_GPU_TIMEOUT] = "timeout",
      [ETHX_GPU_REMOTE_ERROR] = "remote error",
      [ETHX_GPU_BAD_WIDTH] = "bad width",
      [ETHX_GPU_UNREACHABLE] = "unreachable",
      [ETHX_GPU_INTERNAL] = "internal error",
  };
  if (status >= 0 && status < ETHX_GPU_STATUS_COUNT) return device_names[status];
  switch (status) {
    case ETHX_DEV_ENODEV:
      return "no such device";
    case ETHX_DEV_ELOCK:
      return "lock held";
    case ETHX_DEV_EBUSY:
      return "copy engine busy";
    case ETHX_DEV_EINVAL:
      return "invalid argument";
    case ETHX_DEV_ESYS:
      return "system error";
    case ETHX_DEV_ETIMEDOUT:
      return "timed out";
    case ETHX_DEV_EVERSION:
      return "register map too old";
    default:
      return "unknown status";
  }
}

int ethx_sdk_status_of_error_bits(uint32_t bits) {
  for (int code = ETHX_GPU_OUT_OF_WINDOW; code <= ETHX_GPU_UNREACHABLE; ++code) {
    if ((bits & ethx_error_bit_of_status(code)) != 0) return code;
  }
  if ((bits & ETHX_ERROR_NO_FABRIC) != 0) return ETHX_GPU_UNREACHABLE;
  if ((bits & ETHX_ERROR_BAD_REGISTER) != 0) return ETHX_GPU_INTERNAL;
  if ((bits & ETHX_ERROR_COPY_BUSY) != 0) return ETHX_DEV_EBUSY;
  return ETHX_GPU_OK;
}

int ethx_dev_take_error(ethx_dev* dev, ethx_dev_fault* fault) {
  if (dev == NULL) return ETHX_DEV_EINVAL;
  const uint32_t bits = (uint32_t)ETHX_SDK_READ(dev, ERROR);
  const uint64_t fault_addr = bits != 0 ? ETHX_SDK_READ(dev, FAULT_ADDR) : 0;
  if (bits != 0) ETHX_SDK_WRITE(dev, ERROR, bits); /* RW1C: clears what was read */
  if (fault != NULL) {
    fault->error_bits = bits;
    fault->fault_addr = fault_addr;
  }
  return ethx_sdk_status_of_error_bits(bits);
}

int ethx_dev_get_counters(ethx_dev* dev, ethx_dev_counters* counters) {
  if (dev == NULL || counters == NULL) return ETHX_DEV_EINVAL;
  counters->loads = ETHX_SDK_READ(dev, CNT_LOADS);
  counters->stores = ETHX_SDK_READ(dev, CNT_STORES);
  counters->atomics = ETHX_SDK_READ(dev, CNT_ATOMICS);
  counters->errors = ETHX_SDK_READ(dev, CNT_ERRORS);
  counters->timeouts = ETHX_SDK_READ(dev, CNT_TIMEOUTS);
  counters->served_requests = ETHX_SDK_READ(dev, CNT_SERVED);
  counters->copies = ETHX_SDK_READ(dev, CNT_COPIES);
  counters->copy_bytes = ETHX_SDK_READ(dev, CNT_COPY_BYTES);
  return ETHX_GPU_OK;
}
