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

class EthxGpu {
 public:
  explicit EthxGpu(PciFunction function) : function_(std::move(function)) {}

  const std::string& bdf() const { return function_.bdf; }

  // BAR `index`, mapped on first use (the control BAR is 0; later BARs come with later
  // register map versions). Throws std::runtime_error if the device has no such BAR.
  const MmioBar& bar(unsigned index);

  std::uint64_t read(const Register& reg) { return bar(kControlBar).read(reg.offset, reg.width); }

 private:
  PciFunction function_;
  std::map<unsigned, std::unique_ptr<MmioBar>> bars_;
};

// Every ethx-gpu function under `devices_dir`, in BDF order.
std::vector<EthxGpu> find_ethx_gpus(const std::filesystem::path& devices_dir = kSysfsPciDevices);

}  // namespace ethx::guest
