#include "qemu-device/guest-tools/ethx_gpu.hpp"

#include <stdexcept>

namespace ethx::guest {

const MmioBar& EthxGpu::bar(unsigned index) {
  auto found = bars_.find(index);
  if (found != bars_.end()) return *found->second;
  const auto resource = function_.sysfs_dir / ("resource" + std::to_string(index));
  if (!std::filesystem::exists(resource)) {
    throw std::runtime_error("ethx GPU " + function_.bdf + " has no BAR " + std::to_string(index));
  }
  ensure_memory_decoding(function_);
  return *bars_.emplace(index, std::make_unique<MmioBar>(resource)).first->second;
}

std::vector<EthxGpu> find_ethx_gpus(const std::filesystem::path& devices_dir) {
  std::vector<EthxGpu> gpus;
  for (auto& function : find_pci_functions(devices_dir, kPciVendorId, kPciDeviceId)) {
    gpus.emplace_back(std::move(function));
  }
  return gpus;
}

}  // namespace ethx::guest
