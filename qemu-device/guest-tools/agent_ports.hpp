// The virtio-serial ports ethx-agent serves: the ports QEMU named org.ethx.agent.<N>
// (`-device virtserialport,name=...`, fabric/vm/vm_plan.cpp), found through sysfs because the
// guest image has no udev to make /dev/virtio-ports/<name>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ethx::guest {

inline const std::filesystem::path kSysfsVirtioPorts = "/sys/class/virtio-ports";

struct AgentPortInfo {
  std::string name;              // "org.ethx.agent.2"
  std::filesystem::path device;  // /dev/vport1p3
};

// Ports under `class_dir` whose name file starts with agent::kPortNamePrefix, sorted by name;
// `dev_dir` is where their nodes are. A port whose name has not arrived yet is left out.
std::vector<AgentPortInfo> find_agent_ports(const std::filesystem::path& class_dir,
                                            const std::filesystem::path& dev_dir);

inline const std::filesystem::path kSysfsVirtioDevices = "/sys/bus/virtio/devices";

// True if a virtio console (virtio-serial) device is under `devices_dir` (virtio_pci adds them
// while it loads, before the ports appear): without one there is nothing to wait for.
bool has_virtio_console(const std::filesystem::path& devices_dir);

// Waits (start-up only: the kernel adds and names ports asynchronously after modprobe) until
// `expected` ports are named or `timeout_ms` passed; returns what it found then.
std::vector<AgentPortInfo> wait_for_agent_ports(std::size_t expected, std::int64_t timeout_ms);

// What udev would do: /dev/virtio-ports/<name> -> ../vportXpY, for people looking for them.
void link_port_names(const std::vector<AgentPortInfo>& ports);

// `ethx.agent_ports=N` on the kernel command line `cmdline`; `fallback` if absent or invalid.
std::size_t agent_ports_from_cmdline(const std::string& cmdline, std::size_t fallback);

}  // namespace ethx::guest
