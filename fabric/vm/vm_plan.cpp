#include "fabric/vm/vm_plan.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "fabric/transport/net/netns_topology.hpp"
#include "fabric/vm/qemu_features.hpp"

namespace ethx {

std::string guest_nic_ip(std::size_t vm) {
  return kGuestNicPrefix + std::to_string(vm + 1);
}

std::string guest_nic_mac(std::size_t vm) {
  char text[32];
  std::snprintf(text, sizeof text, "02:e7:6e:00:00:%02zx", (vm + 1) & 0xff);
  return text;
}

std::string host_port_ip() {
  return std::string(kGuestNicPrefix) + "254";
}
std::string host_port_mac() {
  return "02:e7:6e:00:00:fe";
}

std::vector<std::string> guest_nic_switch_ports(const std::string& netns_tag, std::size_t vms) {
  std::vector<std::string> ports;
  for (std::size_t vm = 0; vm < vms; ++vm) ports.push_back(netns::tap_interface(netns_tag, vm));
  ports.push_back(netns::host_port_switch_interface(netns_tag));
  return ports;
}

namespace {

bool shared_root_switched_off() {
  const char* value = std::getenv("ETHX_SHARED_ROOT");
  return value != nullptr && std::string(value) == "0";
}

}  // namespace

void locate_vm_image(VmPlan& plan) {
  auto env_or = [](const char* name, const std::string& fallback) {
    const char* value = std::getenv(name);
    return std::string(value != nullptr && *value != '\0' ? value : fallback);
  };
  const char* home = std::getenv("HOME");
  const std::string cache = env_or("ETHX_CACHE", std::string(home ? home : "") + "/.cache/ethx");
  if (plan.qemu.empty())
    plan.qemu = env_or("ETHX_QEMU", cache + "/qemu-7.2/src/build/qemu-system-x86_64");
  const std::string variant = plan.guest_nics ? "RDMA_" : "";
  const std::string image = cache + (plan.guest_nics ? "/guest-rdma" : "/guest");
  if (plan.kernel.empty()) {
    plan.kernel = env_or(("ETHX_GUEST_" + variant + "KERNEL").c_str(), image + "/vmlinux");
  }
  if (plan.initrd.empty()) {
    plan.initrd =
        env_or(("ETHX_GUEST_" + variant + "INITRD").c_str(), image + "/initramfs.cpio.gz");
  }
  if (!std::filesystem::exists(plan.qemu)) {
    throw std::runtime_error("no QEMU with the ethx-gpu device at " + plan.qemu +
                             "; build it with qemu-device/build-qemu.sh (or set ETHX_QEMU)");
  }
  if (plan.guest_nics &&
      (!std::filesystem::exists(plan.kernel) || !std::filesystem::exists(plan.initrd))) {
    throw std::runtime_error("no RDMA guest image at " + plan.kernel + " / " + plan.initrd +
                             "; build it with qemu-device/guest/build-guest-image.sh --rdma "
                             "--tools build/bin (or set ETHX_GUEST_RDMA_KERNEL, "
                             "ETHX_GUEST_RDMA_INITRD)");
  }
  if (!std::filesystem::exists(plan.kernel) || !std::filesystem::exists(plan.initrd)) {
    throw std::runtime_error("no guest image at " + plan.kernel + " / " + plan.initrd +
                             "; build it with qemu-device/guest/build-guest-image.sh --tools "
                             "build/bin (or set ETHX_GUEST_KERNEL, ETHX_GUEST_INITRD)");
  }
  // A QEMU built before virtfs was configured boots the guest in its initramfs, as before.
  plan.shared_root = !shared_root_switched_off() && qemu_supports_virtfs(plan.qemu);
}

std::string shared_root_absence(const VmPlan& plan) {
  if (plan.shared_root) return {};
  if (shared_root_switched_off()) return "ETHX_SHARED_ROOT=0";
  return plan.qemu + " has no virtio-9p (qemu-device/build-qemu.sh builds it with virtfs)";
}

std::string vm_serial_path(const std::string& log_directory, std::size_t vm) {
  return log_directory + "/vm-" + std::to_string(vm) + ".console";
}

std::string vm_agent_path(const std::string& log_directory, std::size_t vm) {
  return log_directory + "/vm-" + std::to_string(vm) + ".agent.sock";
}

std::string vm_agent_port_path(const std::string& log_directory, std::size_t vm, std::size_t port) {
  return log_directory + "/vm-" + std::to_string(vm) + ".agent-" + std::to_string(port) + ".sock";
}

std::string vm_agent_lock_path(const std::string& log_directory, std::size_t vm, std::size_t port) {
  return log_directory + "/vm-" + std::to_string(vm) + ".agent-" + std::to_string(port) + ".lock";
}

namespace {

// ethx-agent's ports, after the GPUs so that their PCI addresses stay where they were: one
// virtio-serial controller, a socket chardev and a named port per command channel.
void add_agent_ports(std::vector<std::string>& argv, const VmPlan& plan, std::size_t vm,
                     const std::string& log_directory) {
  argv.insert(argv.end(), {"-device", "virtio-serial-pci"});
  for (std::size_t port = 0; port < plan.agent_ports(); ++port) {
    const std::string id = "agent" + std::to_string(port);
    argv.insert(argv.end(),
                {"-chardev",
                 "socket,id=" + id + ",path=" + vm_agent_port_path(log_directory, vm, port) +
                     ",server=on,wait=off",
                 "-device",
                 "virtserialport,chardev=" + id + ",name=org.ethx.agent." + std::to_string(port)});
  }
}

}  // namespace

std::vector<std::string> qemu_command(const VmPlan& plan, std::size_t vm, const VmFabric& fabric) {
  std::string append =
      "console=ttyS0 quiet panic=-1 ethx.agent_ports=" + std::to_string(plan.agent_ports());
  if (plan.guest_nics) {
    append += " ethx.ip=" + guest_nic_ip(vm) + "/" + std::to_string(kGuestNicPrefixLength);
  }
  if (plan.shared_root) append += " ethx.root=9p";
  if (vm < plan.kernel_args.size() && !plan.kernel_args[vm].empty()) {
    append += " " + plan.kernel_args[vm];
  }
  // Console (ttyS0): a socket to attach to (`socat - UNIX-CONNECT:vm-<k>.console.sock`), and
  // everything it prints kept in vm-<k>.console. ttyS1: the guest's command agent.
  const std::string base = fabric.log_directory + "/vm-" + std::to_string(vm);
  const std::string console =
      "socket,id=console,path=" + base + ".console.sock" +
      ",server=on,wait=off,logfile=" + vm_serial_path(fabric.log_directory, vm);
  const std::string agent =
      "socket,id=agent,path=" + vm_agent_path(fabric.log_directory, vm) + ",server=on,wait=off";
  // clang-format off
  std::vector<std::string> argv = {
      plan.qemu,
      "-L", "/usr/share/qemu", "-L", "/usr/share/seabios", "-L", "/usr/lib/ipxe/qemu",
      "-accel", plan.accel, "-machine", "q35", "-m", std::to_string(plan.memory_mib), "-smp", "1",
      "-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none",
      "-chardev", console, "-chardev", agent,
      "-serial", "chardev:console", "-serial", "chardev:agent",
      "-no-reboot", "-kernel", plan.kernel, "-initrd", plan.initrd, "-append", append};
  // clang-format on
  if (plan.shared_root) argv.insert(argv.end(), {"-virtfs", kSharedRootVirtfs});
  if (plan.guest_nics) {
    if (fabric.tap_fd < 0) throw std::logic_error("qemu_command: guest NICs need a tap descriptor");
    // virtio-net without offloads (the tap has no virtio header): every frame on the switch is
    // a complete Ethernet frame with its checksums, as a physical NIC would send it.
    argv.insert(argv.end(), {"-netdev", "tap,id=nic0,fd=" + std::to_string(fabric.tap_fd),
                             "-device", "virtio-net-pci,netdev=nic0,mac=" + guest_nic_mac(vm)});
  }
  for (std::size_t i = 0; i < plan.gpus_per_vm; ++i) {
    const std::size_t gpu = vm * plan.gpus_per_vm + i;
    std::string device = "ethx-gpu,gpu-id=" + std::to_string(gpu) + ",fabric=" + fabric.fabric +
                         ",transport=" + fabric.transport + ",gpus=" + std::to_string(fabric.gpus);
    if (!fabric.netns_tag.empty()) device += ",netns-tag=" + fabric.netns_tag;
    if (!fabric.config_path.empty()) device += ",config=" + fabric.config_path;
    argv.insert(argv.end(), {"-device", device});
  }
  add_agent_ports(argv, plan, vm, fabric.log_directory);
  return argv;
}

}  // namespace ethx
