// Finding the ethx GPUs through sysfs, without a kernel driver bound to them: libethx-gpu's
// discovery (qemu-device/sdk/src/sysfs.c) under a root the caller names.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ethx::guest {

inline const std::filesystem::path kSysfsPciDevices = "/sys/bus/pci/devices";

// The PCI addresses ("0000:00:04.0") of the functions 0x1234:0xe7e0 under `devices_dir`,
// sorted (stable across boots of one VM command line). Throws std::runtime_error if
// `devices_dir` cannot be listed.
std::vector<std::string> find_ethx_bdfs(const std::filesystem::path& devices_dir);

}  // namespace ethx::guest
