// An ethx-gpu PCI device seen from inside the guest: its BARs and its control registers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "qemu-device/guest-tools/ethx_regs.hpp"
#include "qemu-device/guest-tools/mmio_bar.hpp"
#include "qemu-device/guest-tools/pci_scan.hpp"

namespace ethx::guest {

// One ethx GPU as the commands use it: its PCI address and its BARs. EthxGpu is the sysfs
// one; the unit tests implement it with device models.
class GpuFunction {
 public:
  virtual ~GpuFunction() = default;
  virtual const std::string& bdf() const = 0;
  // BAR `index` (0 control, 2 HBM, 4 window). Throws std::runtime_error if there is none.
  virtual BarAccess& bar(unsigned index) = 0;

  std::uint64_t read(const Register& reg) { return bar(kControlBar).read(reg.offset, reg.width); }
  void write(const Register& reg, std::uint64_t value) {
    bar(kControlBar).write(reg.offset, reg.width, value);
  }
};

using GpuList = std::vector<std::unique_ptr<GpuFunction>>;

class EthxGpu : public GpuFunction {
 public:
  explicit EthxGpu(PciFunction function) : function_(std::move(function)) {}

  const std::string& bdf() const override { return function_.bdf; }

  // BAR `index`, mapped on first use through sysfs resourceN (BAR 2 as RAM).
  BarAccess& bar(unsigned index) override;

 private:
  PciFunction function_;
  std::map<unsigned, std::unique_ptr<MmioBar>> bars_;
};

// Every ethx-gpu function under `devices_dir`, in BDF order.
std::vector<EthxGpu> find_ethx_gpus(const std::filesystem::path& devices_dir = kSysfsPciDevices);
GpuList open_ethx_gpus(const std::filesystem::path& devices_dir = kSysfsPciDevices);

}  // namespace ethx::guest
