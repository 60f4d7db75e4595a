#include "qemu-device/guest-tools/mmio_bar.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

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

MmioBar::MmioBar(const std::filesystem::path& resource_file, bool ram) : ram_(ram) {
  // O_SYNC: sysfs maps the BAR uncached only when asked to.
  const int fd = ::open(resource_file.c_str(), O_RDWR | O_SYNC | O_CLOEXEC);
  if (fd < 0) {
    throw std::runtime_error("cannot open " + resource_file.string() + ": " + std::strerror(errno));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || info.st_size <= 0) {
    ::close(fd);
    throw std::runtime_error(resource_file.string() + " is empty (BAR not assigned?)");
  }
  size_ = static_cast<std::size_t>(info.st_size);
  base_ = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int mmap_errno = errno;
  ::close(fd);  // the mapping stays valid
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    throw std::runtime_error("cannot mmap " + resource_file.string() + ": " +
                             std::strerror(mmap_errno));
  }
}

MmioBar::~MmioBar() {
  if (base_ != nullptr) ::munmap(base_, size_);
}

volatile std::uint8_t* MmioBar::at(std::uint64_t offset, unsigned width) const {
  check_access(size_, offset, width);
  return static_cast<volatile std::uint8_t*>(base_) + offset;
}

std::uint64_t MmioBar::read(std::uint64_t offset, unsigned width) {
  volatile std::uint8_t* p = at(offset, width);
  switch (width) {
    case 1:
      return *p;
    case 2:
      return *reinterpret_cast<volatile std::uint16_t*>(p);
    case 4:
      return *reinterpret_cast<volatile std::uint32_t*>(p);
    default:
      return *reinterpret_cast<volatile std::uint64_t*>(p);
  }
}

void MmioBar::write(std::uint64_t offset, unsigned width, std::uint64_t value) {
  volatile std::uint8_t* p = at(offset, width);
  switch (width) {
    case 1:
      *p = static_cast<std::uint8_t>(value);
      break;
    case 2:
      *reinterpret_cast<volatile std::uint16_t*>(p) = static_cast<std::uint16_t>(value);
      break;
    case 4:
      *reinterpret_cast<volatile std::uint32_t*>(p) = static_cast<std::uint32_t>(value);
      break;
    default:
      *reinterpret_cast<volatile std::uint64_t*>(p) = value;
      break;
  }
}

}  // namespace ethx::guest
