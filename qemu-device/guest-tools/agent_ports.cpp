#include "qemu-device/guest-tools/agent_ports.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>

#include "qemu-device/agent-protocol/agent_protocol.hpp"

namespace ethx::guest {

std::vector<AgentPortInfo> find_agent_ports(const std::filesystem::path& class_dir,
                                            const std::filesystem::path& dev_dir) {
  std::vector<AgentPortInfo> ports;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(class_dir, error)) {
    std::ifstream in(entry.path() / "name");
    std::string name;
    if (!std::getline(in, name) || name.rfind(agent::kPortNamePrefix, 0) != 0) continue;
    const std::filesystem::path device = dev_dir / entry.path().filename();
    if (!std::filesystem::exists(device, error)) continue;
    ports.push_back({name, device});
  }
  std::sort(ports.begin(), ports.end(),
            [](const AgentPortInfo& a, const AgentPortInfo& b) { return a.name < b.name; });
  return ports;
}

bool has_virtio_console(const std::filesystem::path& devices_dir) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(devices_dir, error)) {
    std::ifstream in(entry.path() / "device");
    std::string id;
    if (in >> id && id == "0x0003") return true;  // VIRTIO_ID_CONSOLE
  }
  return false;
}

std::vector<AgentPortInfo> wait_for_agent_ports(std::size_t expected, std::int64_t timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::vector<AgentPortInfo> ports = find_agent_ports(kSysfsVirtioPorts, "/dev");
    if (ports.size() >= expected || std::chrono::steady_clock::now() >= deadline) return ports;
    // sysfs attributes give no notification when they appear: a short look again, during
    // start-up only.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void link_port_names(const std::vector<AgentPortInfo>& ports) {
  std::error_code error;
  std::filesystem::create_directories("/dev/virtio-ports", error);
  for (const AgentPortInfo& port : ports) {
    const std::filesystem::path link = std::filesystem::path("/dev/virtio-ports") / port.name;
    std::filesystem::remove(link, error);
    std::filesystem::create_symlink("../" + port.device.filename().string(), link, error);
  }
}

std::size_t agent_ports_from_cmdline(const std::string& cmdline, std::size_t fallback) {
  std::istringstream words(cmdline);
  const std::string key = "ethx.agent_ports=";
  for (std::string word; words >> word;) {
    if (word.rfind(key, 0) != 0) continue;
    const std::string value = word.substr(key.size());
    if (value.empty() || value.size() > 3 ||
        !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return fallback;
    }
    return static_cast<std::size_t>(std::stoul(value));
  }
  return fallback;
}

}  // namespace ethx::guest
