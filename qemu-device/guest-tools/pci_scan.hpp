// Finding PCI functions through sysfs, without a kernel driver bound to them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ethx::guest {

inline const std::filesystem::path kSysfsPciDevices = "/sys/bus/pci/devices";

struct PciFunction {
  std::string bdf;                  // "0000:00:04.0"
  std::filesystem::path sysfs_dir;  // devices_dir / bdf
};

// Functions whose sysfs vendor and device files match, sorted by BDF (stable across boots of
// one VM command line). Throws std::runtime_error if `devices_dir` cannot be listed.
std::vector<PciFunction> find_pci_functions(const std::filesystem::path& devices_dir,
                                            std::uint16_t vendor, std::uint16_t device);

// With no driver bound, nothing guarantees that the function decodes memory accesses; the
// firmware usually enabled it, else sysfs' enable file does (pci_enable_device).
void ensure_memory_decoding(const PciFunction& function);

}  // namespace ethx::guest
