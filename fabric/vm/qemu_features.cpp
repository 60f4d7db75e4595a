#include "fabric/vm/qemu_features.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "fabric/platform/child_process.hpp"

namespace ethx {
namespace {

constexpr std::int64_t kListTimeoutMs = 10'000;  // it prints and exits in ~50 ms

// A relinked binary (build-qemu.sh relinks after every device change) is asked again.
std::string binary_key(const std::string& qemu) {
  struct stat info {};
  if (::stat(qemu.c_str(), &info) != 0) return {};
  return qemu + " " + std::to_string(info.st_size) + " " + std::to_string(info.st_mtim.tv_sec) +
         "." + std::to_string(info.st_mtim.tv_nsec);
}

std::string device_listing(const std::string& qemu) {
  const std::filesystem::path listing =
      std::filesystem::temp_directory_path() /
      ("ethx-qemu-devices-" + std::to_string(::getpid()) + ".txt");
  ChildProcess::SpawnOptions options;
  options.log_path = listing.string();
  std::string text;
  try {
    ChildProcess child = ChildProcess::spawn({qemu, "-device", "help"}, options);
    if (!child.wait_exit(kListTimeoutMs)) child.terminate(1000);
    std::ifstream in(listing);
    std::stringstream content;
    content << in.rdbuf();
    text = content.str();
  } catch (const std::exception&) {
    // Cannot start: it lists nothing, and the caller leaves the feature out.
  }
  std::error_code ignored;
  std::filesystem::remove(listing, ignored);
  return text;
}

}  // namespace

bool qemu_has_device(const std::string& qemu, const std::string& device) {
  static std::mutex mutex;
  static std::map<std::string, std::string> listings;  // binary_key -> `-device help`
  const std::string key = binary_key(qemu);
  if (key.empty()) return false;
  std::optional<std::string> listing;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto found = listings.find(key); found != listings.end()) listing = found->second;
  }
  if (!listing) {
    listing = device_listing(qemu);
    const std::lock_guard<std::mutex> lock(mutex);
    listings[key] = *listing;
  }
  // Lines look like: name "virtio-9p-pci", bus PCI, alias "virtio-9p"
  return listing->find("name \"" + device + "\"") != std::string::npos;
}

bool qemu_supports_virtfs(const std::string& qemu) {
  return qemu_has_device(qemu, "virtio-9p-pci");
}

}  // namespace ethx
