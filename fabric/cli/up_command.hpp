// `ethx up`, `ethx status`, `ethx down`: a fabric that keeps running between commands, so that
// users (and later VMs) can attach to it, recorded in a run directory (run_state.hpp).
//
// `ethx up` returns (exit 0) once the switch forwards and every node is ready. Running it again
// for a name that is up is refused (exit 1, naming the fabric); for a name whose processes
// are all gone (killed, machine crashed) it first removes those remains, says so, and starts
// afresh. docs/operations.md describes all three commands.
#pragma once

#include <cstddef>
#include <string>

namespace ethx {

struct UpOptions {
  std::string name = "default";
  std::size_t gpus = 0;  // 0: from the topology
  std::string transport = "shm";
  std::string config_path;
  bool quiet = false;
  // VMs: GPUs 0 .. vms × gpus_per_vm − 1 are ethx-gpu devices in that many QEMU VMs.
  std::size_t vms = 0;
  std::size_t gpus_per_vm = 4;
  std::string vm_append;  // extra guest kernel command line (e.g. ethx.run=list)
  // Each VM gets a NIC on the switch and boots the RDMA image (docs/softroce.md).
  bool guest_nics = false;
};
int run_up(const UpOptions& options);

struct DownOptions {
  std::string name = "default";
  bool all = false;  // every fabric with a run directory
  bool quiet = false;
};
int run_down(const DownOptions& options);

}  // namespace ethx
