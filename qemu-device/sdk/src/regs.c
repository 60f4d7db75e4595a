/*
 * Single accesses to a mapped BAR. A device register, and every window address, sees exactly
 * the access made here: one volatile load or store of 1, 2, 4 or 8 bytes, never memcpy (which
 * may split or merge accesses).
 */
#include "sdk_internal.h"

int ethx_sdk_access_ok(uint64_t bytes, uint64_t offset, unsigned width) {
  const int width_ok = width == 1 || width == 2 || width == 4 || width == 8;
  return width_ok && offset % width == 0 && offset < bytes && bytes - offset >= width;
}

uint64_t ethx_sdk_all_ones(unsigned width) {
  return width >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * width)) - 1;
}

/* The access's address, untyped: its alignment was checked (ethx_sdk_access_ok). */
static volatile void* address_of(volatile uint8_t* base, uint64_t offset) {
  return (volatile void*)((uintptr_t)base + (uintptr_t)offset);
}

uint64_t ethx_sdk_mmio_read(volatile uint8_t* base, uint64_t offset, unsigned width) {
  volatile void* at = address_of(base, offset);
  switch (width) {
    case 1:
      return *(volatile uint8_t*)at;
    case 2:
      return *(volatile uint16_t*)at;
    case 4:
      return *(volatile uint32_t*)at;
    default:
      return *(volatile uint64_t*)at;
  }
}

void ethx_sdk_mmio_write(volatile uint8_t* base, uint64_t offset, unsigned width, uint64_t value) {
  volatile void* at = address_of(base, offset);
  switch (width) {
    case 1:
      *(volatile uint8_t*)at = (uint8_t)value;
      break;
    case 2:
      *(volatile uint16_t*)at = (uint16_t)value;
      break;
    case 4:
      *(volatile uint32_t*)at = (uint32_t)value;
      break;
    default:
      *(volatile uint64_t*)at = value;
      break;
  }
}

uint64_t ethx_sdk_reg_read(const ethx_dev* dev, uint64_t offset, unsigned width) {
  if (dev->io.read != NULL) return dev->io.read(dev->io.context, offset, width);
  return ethx_sdk_mmio_read(dev->regs.base, offset, width);
}

void ethx_sdk_reg_write(ethx_dev* dev, uint64_t offset, unsigned width, uint64_t value) {
  if (dev->io.write != NULL) {
    dev->io.write(dev->io.context, offset, width, value);
  } else {
    ethx_sdk_mmio_write(dev->regs.base, offset, width, value);
  }
}

uint64_t ethx_dev_read_reg(ethx_dev* dev, unsigned offset, unsigned width) {
  if (dev == NULL) return UINT64_MAX;
  if ((width != 4 && width != 8) || !ethx_sdk_access_ok(dev->regs.bytes, offset, width)) {
    ethx_sdk_fail(dev, ETHX_DEV_EINVAL,
                  "register read at 0x%x of %u bytes: registers are 4 or 8 bytes, naturally "
                  "aligned, below 0x%llx",
                  offset, width, (unsigned long long)dev->regs.bytes);
    return UINT64_MAX;
  }
  return ethx_sdk_reg_read(dev, offset, width);
}

void ethx_dev_write_reg(ethx_dev* dev, unsigned offset, unsigned width, uint64_t value) {
  if (dev == NULL) return;
  if ((width != 4 && width != 8) || !ethx_sdk_access_ok(dev->regs.bytes, offset, width)) {
    ethx_sdk_fail(dev, ETHX_DEV_EINVAL,
                  "register write at 0x%x of %u bytes: registers are 4 or 8 bytes, naturally "
                  "aligned, below 0x%llx",
                  offset, width, (unsigned long long)dev->regs.bytes);
    return;
  }
  ethx_sdk_reg_write(dev, offset, width, value);
}
