#include "qemu-device/guest-tools/ethx_gpu.hpp"

#include <stdexcept>

namespace ethx::guest {

BarAccess& EthxGpu::bar(unsigned index) {
  auto found = bars_.find(index);
  if (found != bars_.end()) return *found->second;
  const auto resource = function_.sysfs_dir / ("resource" + std::to_string(index));
  if (!std::filesystem::exists(resource)) {
    throw std::runtime_error("ethx GPU " + function_.bdf + " has no BAR " + std::to_string(index) +
                             (index == kControlBar ? "" : " (register map version 2 needed)"));
  }
  ensure_memory_decoding(function_);
  return *bars_.emplace(index, std::make_unique<MmioBar>(resource, index == kHbmBar)).first->second;
}

std::vector<EthxGpu> find_ethx_gpus(const std::filesystem::path& devices_dir) {
  std::vector<EthxGpu> gpus;
  for (auto& function : find_pci_functions(devices_dir, kPciVendorId, kPciDeviceId)) {
    gpus.emplace_back(std::move(function));
  }
  return gpus;
}

GpuList open_ethx_gpus(const std::filesystem::path& devices_dir) {
  GpuList gpus;
  for (auto& gpu : find_ethx_gpus(devices_dir)) {
    gpus.push_back(std::make_unique<EthxGpu>(std::move(gpu)));
  }
  return gpus;
}

}  // namespace ethx::guest
