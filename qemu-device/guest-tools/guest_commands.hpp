// The ethx-guest commands, each producing the JSON document it prints.
#pragma once

#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "qemu-device/guest-tools/guest_cli.hpp"
#include "qemu-device/guest-tools/pci_scan.hpp"

namespace ethx::guest {

// A command that parsed but cannot run here (no such GPU, access rejected); exit status 1.
struct CommandError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

nlohmann::json run_command(const GuestCommand& command,
                           const std::filesystem::path& devices_dir = kSysfsPciDevices);

}  // namespace ethx::guest
