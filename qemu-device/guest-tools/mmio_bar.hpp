// One PCI BAR mapped into this process through sysfs (resourceN), accessed register-wise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace ethx::guest {

// True for the access widths a BAR access can have: 1, 2, 4 or 8 bytes.
bool valid_width(unsigned width);

class MmioBar {
 public:
  // Maps the whole resource file; throws std::runtime_error naming the file on failure.
  explicit MmioBar(const std::filesystem::path& resource_file);
  ~MmioBar();
  MmioBar(const MmioBar&) = delete;
  MmioBar& operator=(const MmioBar&) = delete;

  std::size_t size() const { return size_; }

  // Exactly one load or store of `width` bytes: a device register sees the access size the
  // guest tool chose, so these never go through memcpy (which may split or merge accesses).
  // Throw std::invalid_argument for a bad width, a misaligned or out-of-range offset.
  std::uint64_t read(std::uint64_t offset, unsigned width) const;
  void write(std::uint64_t offset, unsigned width, std::uint64_t value) const;

 private:
  volatile std::uint8_t* at(std::uint64_t offset, unsigned width) const;

  void* base_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ethx::guest
