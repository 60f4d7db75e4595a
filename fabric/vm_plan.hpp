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

  std::size_t vm_gpus() const { return count * gpus_per_vm; }
  std::size_t vm_of_gpu(std::size_t gpu) const { return gpu / gpus_per_vm; }
};

// Fills qemu, kernel and initrd the way qemu-device/guest/run-vm.sh does: ETHX_QEMU,
// ETHX_GUEST_KERNEL, ETHX_GUEST_INITRD, else ${ETHX_CACHE:-$HOME/.cache/ethx}/...; throws
// std::runtime_error naming the script that builds what is missing.
void locate_vm_image(VmPlan& plan);

struct VmFabric {
  std::string fabric;  // instance name (/dev/shm names)
  std::string transport;
  std::string netns_tag;
  std::string config_path;
  std::size_t gpus = 0;
  std::string log_directory;
};

// The command line of VM `vm` (TCG: KVM on these machines does not boot stock kernels).
std::vector<std::string> qemu_command(const VmPlan& plan, std::size_t vm, const VmFabric& fabric);
// <log dir>/vm-<k>.console: everything the VM printed on its console (ttyS0).
std::string vm_serial_path(const std::string& log_directory, std::size_t vm);
// <log dir>/vm-<k>.agent.sock: the guest's command agent on ttyS1 (guest_agent.hpp).
std::string vm_agent_path(const std::string& log_directory, std::size_t vm);

}  // namespace ethx
