#include "qemu-device/guest-tools/pci_scan.hpp"

#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "qemu-device/sdk/src/sdk_internal.h"

namespace ethx::guest {

std::vector<std::string> find_ethx_bdfs(const std::filesystem::path& devices_dir) {
  char error[ETHX_SDK_ERROR_BYTES] = "";
  int count = 0;
  const std::unique_ptr<ethx_sdk_bdf, decltype(&std::free)> found(
      ethx_sdk_find_gpus_in(devices_dir.c_str(), &count, error, sizeof error), &std::free);
  if (count < 0) throw std::runtime_error(error);
  std::vector<std::string> bdfs;
  bdfs.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) bdfs.emplace_back(found.get()[i].name);
  return bdfs;
}

}  // namespace ethx::guest
