// One PCI BAR of an ethx GPU, accessed register-wise: BarAccess (what the commands use; the unit
// tests implement it with device models) and MmioBar (a BAR libethx-gpu mapped).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ethx::guest {

// True for the access widths a BAR access can have: 1, 2, 4 or 8 bytes.
bool valid_width(unsigned width);

// What the guest tools do with a BAR: single accesses of 1, 2, 4 or 8 bytes. MmioBar is the
// real one; the unit tests implement it with device models (tests/unit/guest_tools_test.cpp).
class BarAccess {
 public:
  virtual ~BarAccess() = default;
  virtual std::size_t size() const = 0;
  // Exactly one access of `width` bytes. Throw std::invalid_argument for a bad width, a
  // misaligned or out-of-range offset.
  virtual std::uint64_t read(std::uint64_t offset, unsigned width) = 0;
  virtual void write(std::uint64_t offset, unsigned width, std::uint64_t value) = 0;
  // A RAM-backed BAR (the local HBM) may expose its mapping for bulk copies and compares;
  // nullptr for MMIO, where only single accesses are meaningful.
  virtual std::uint8_t* ram() { return nullptr; }
};

// Throws std::invalid_argument unless `width` is valid and [offset, offset + width) is an
// aligned range inside `size` bytes.
void check_access(std::size_t size, std::uint64_t offset, unsigned width);

// A BAR as libethx-gpu mapped it (sysfs resourceN, O_SYNC: uncached); the mapping belongs to
// the device's SDK handle (EthxGpu), which outlives this view.
class MmioBar : public BarAccess {
 public:
  // `ram`: the BAR is memory (BAR 2), so ram() hands out the mapping.
  MmioBar(volatile std::uint8_t* base, std::size_t size, bool ram)
      : base_(base), size_(size), ram_(ram) {}

  std::size_t size() const override { return size_; }

  // Exactly one load or store of `width` bytes (the SDK's ethx_sdk_mmio_read/write): a device
  // register sees the access size the guest tool chose, never a memcpy's split or merged ones.
  std::uint64_t read(std::uint64_t offset, unsigned width) override;
  void write(std::uint64_t offset, unsigned width, std::uint64_t value) override;
  std::uint8_t* ram() override { return ram_ ? const_cast<std::uint8_t*>(base_) : nullptr; }

 private:
  volatile std::uint8_t* base_;
  std::size_t size_;
  bool ram_;
};

}  // namespace ethx::guest
