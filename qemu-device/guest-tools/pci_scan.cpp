#include "qemu-device/guest-tools/pci_scan.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace ethx::guest {
namespace {

// sysfs id files hold one hex number ("0x1234\n"); a missing or odd file is no match.
bool read_hex_file(const std::filesystem::path& file, unsigned long& value) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text)) return false;
  char* end = nullptr;
  value = std::strtoul(text.c_str(), &end, 16);
  return end != text.c_str() && *end == '\0';
}

}  // namespace

std::vector<PciFunction> find_pci_functions(const std::filesystem::path& devices_dir,
                                            std::uint16_t vendor, std::uint16_t device) {
  std::error_code error;
  std::filesystem::directory_iterator entries(devices_dir, error);
  if (error) {
    throw std::runtime_error("cannot list " + devices_dir.string() + ": " + error.message() +
                             " (is sysfs mounted?)");
  }
  std::vector<PciFunction> found;
  for (const auto& entry : entries) {
    unsigned long found_vendor = 0;
    unsigned long found_device = 0;
    if (read_hex_file(entry.path() / "vendor", found_vendor) &&
        read_hex_file(entry.path() / "device", found_device) && found_vendor == vendor &&
        found_device == device) {
      found.push_back({entry.path().filename().string(), entry.path()});
    }
  }
  std::sort(found.begin(), found.end(),
            [](const PciFunction& a, const PciFunction& b) { return a.bdf < b.bdf; });
  return found;
}

void ensure_memory_decoding(const PciFunction& function) {
  constexpr std::streamoff kCommandOffset = 4;
  constexpr unsigned char kMemorySpaceBit = 0x02;
  std::ifstream config(function.sysfs_dir / "config", std::ios::binary);
  char command = 0;
  if (config.seekg(kCommandOffset) && config.get(command) &&
      (static_cast<unsigned char>(command) & kMemorySpaceBit) != 0) {
    return;
  }
  std::ofstream enable(function.sysfs_dir / "enable");
  if (!(enable << "1" << std::flush)) {
    throw std::runtime_error("cannot enable memory decoding of " + function.bdf + " through " +
                             (function.sysfs_dir / "enable").string());
  }
}

}  // namespace ethx::guest
