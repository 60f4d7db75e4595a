#include "qemu-device/guest-tools/mmio_bar.hpp"

#include <stdexcept>
#include <string>

#include "qemu-device/sdk/src/sdk_internal.h"

namespace ethx::guest {

bool valid_width(unsigned width) {
  return width == 1 || width == 2 || width == 4 || width == 8;
}

void check_access(std::size_t size, std::uint64_t offset, unsigned width) {
  if (!valid_width(width)) {
    throw std::invalid_argument("access width " + std::to_string(width) +
                                " is not 1, 2, 4 or 8 bytes");
  }
  if (offset % width != 0) {
    throw std::invalid_argument("offset " + std::to_string(offset) + " is not aligned to the " +
                                std::to_string(width) + "-byte access width");
  }
  if (offset >= size || size - offset < width) {
    throw std::invalid_argument("offset " + std::to_string(offset) + " is outside the " +
                                std::to_string(size) + "-byte BAR");
  }
}

std::uint64_t MmioBar::read(std::uint64_t offset, unsigned width) {
  check_access(size_, offset, width);
  return ethx_sdk_mmio_read(base_, offset, width);
}

void MmioBar::write(std::uint64_t offset, unsigned width, std::uint64_t value) {
  check_access(size_, offset, width);
  ethx_sdk_mmio_write(base_, offset, width, value);
}

}  // namespace ethx::guest
