// VMs whose ethx-gpu devices are GPUs of a fabric (`ethx up --vms`, `ethx bench --vms`): where
// QEMU and the guest image are, and the QEMU command line of each VM. GPUs 0 .. count ×
// gpus_per_vm − 1 live in the VMs (VM v has GPUs v × gpus_per_vm ...), the rest are ethx-node
// processes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ethx {

struct VmPlan {
  std::size_t count = 0;
  std::size_t gpus_per_vm = 1;
  std::string qemu, kernel, initrd;  // locate_vm_image() fills empty ones
  unsigned memory_mib = 256;
  std::vector<std::string> kernel_args;  // extra kernel command line, one entry per VM (or none)
  std::string accel = "tcg";             // "kvm" where a probe boot showed it works (kvm_probe.hpp)
  // `--guest-nics` (docs/softroce.md): each VM gets a virtio-net NIC on a tap that is a port of
  // the fabric's switch, and boots the RDMA image (build-guest-image.sh --rdma), which brings
  // up eth0 with guest_nic_ip(v) and Soft-RoCE (rxe0) before it reports ready.
  bool guest_nics = false;
  // The shared root (docs/guest-image.md): QEMU exports the host's / over virtio-9p and the
  // guest boots into an overlay on it (ethx.root=9p). locate_vm_image() turns it on when the
  // QEMU binary has virtio-9p, unless ETHX_SHARED_ROOT=0.
  bool shared_root = false;

  std::size_t vm_gpus() const { return count * gpus_per_vm; }
  // virtio-serial ports of ethx-agent per VM (docs/agent-protocol.md): one command each at a
  // time, so `ethx run --per-gpu` (one per GPU) leaves 4 for `ethx guest` and other commands.
  std::size_t agent_ports() const { return gpus_per_vm + kSpareAgentPorts; }
  static constexpr std::size_t kSpareAgentPorts = 4;
  std::size_t vm_of_gpu(std::size_t gpu) const { return gpu / gpus_per_vm; }
};

// Guest NIC addressing (198.18.0.0/15 is reserved for benchmarking, RFC 2544; the addresses
// never leave the fabric's switch namespace).
inline constexpr const char* kGuestNicPrefix = "198.18.0.";
inline constexpr unsigned kGuestNicPrefixLength = 24;
std::string guest_nic_ip(std::size_t vm);   // 198.18.0.<vm + 1>
std::string guest_nic_mac(std::size_t vm);  // 02:e7:6e:00:00:<vm + 1>
std::string host_port_ip();                 // 198.18.0.254: a RoCE engine on the host port
std::string host_port_mac();                // 02:e7:6e:00:00:fe
// The switch's extra ports of a fabric with guest NICs: the VMs' taps, then the host port.
std::vector<std::string> guest_nic_switch_ports(const std::string& netns_tag, std::size_t vms);

// Fills qemu, kernel and initrd the way qemu-device/guest/run-vm.sh does: ETHX_QEMU,
// ETHX_GUEST_KERNEL, ETHX_GUEST_INITRD, else ${ETHX_CACHE:-$HOME/.cache/ethx}/...; throws
// std::runtime_error naming the script that builds what is missing. With guest_nics the image
// is the RDMA variant: ETHX_GUEST_RDMA_KERNEL, ETHX_GUEST_RDMA_INITRD, else .../guest-rdma/.
// Sets shared_root (qemu_features.hpp: asks the binary once).
void locate_vm_image(VmPlan& plan);

// Why `plan` has no shared root, for a one-line notice (empty when it has one).
std::string shared_root_absence(const VmPlan& plan);

// The -virtfs export every VM gets with the shared root: the host's whole / once (QEMU cannot
// hot-add an fsdev, and the directories a later `ethx run` needs are not known at boot),
// read-write (the guest decides what is writable), multidevs=remap because / spans several
// filesystems whose inode numbers would collide in one 9p export.
inline constexpr const char* kSharedRootVirtfs =
    "local,path=/,mount_tag=ethxroot,security_model=none,multidevs=remap";

struct VmFabric {
  std::string fabric;  // instance name (/dev/shm names)
  std::string transport;
  std::string netns_tag;
  std::string config_path;
  std::size_t gpus = 0;
  std::string log_directory;
  // Guest NICs: the descriptor number under which QEMU inherits VM's tap (-netdev tap,fd=N).
  int tap_fd = -1;
};

// The command line of VM `vm` (TCG: KVM on these machines does not boot stock kernels).
std::vector<std::string> qemu_command(const VmPlan& plan, std::size_t vm, const VmFabric& fabric);
// <log dir>/vm-<k>.console: everything the VM printed on its console (ttyS0).
std::string vm_serial_path(const std::string& log_directory, std::size_t vm);
// <log dir>/vm-<k>.agent.sock: the guest's legacy command agent on ttyS1 (qemu-device/guest/init).
std::string vm_agent_path(const std::string& log_directory, std::size_t vm);
// <log dir>/vm-<k>.agent-<port>.sock: ethx-agent's virtio-serial port org.ethx.agent.<port>
// (agent_client.hpp), and <log dir>/vm-<k>.agent-<port>.lock, whose flock says which host
// process uses it.
std::string vm_agent_port_path(const std::string& log_directory, std::size_t vm, std::size_t port);
std::string vm_agent_lock_path(const std::string& log_directory, std::size_t vm, std::size_t port);

}  // namespace ethx
