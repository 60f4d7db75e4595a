// `ethx oshrun` (build/bin/oshrun): starts an OpenSHMEM program with one PE per GPU, in the
// VMs of a running fabric or in VMs it boots for the job (docs/shmem.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ethx {

struct OshrunOptions {
  std::size_t pes = 0;                 // -np N
  std::size_t gpus_per_vm = 4;         // for VMs oshrun boots
  std::int64_t timeout_s = 0;          // 0: none
  std::string name = "default";        // the fabric to use if it is up with N GPUs
  std::string transport;               // for VMs oshrun boots; empty: shm, afpacket for rdma
  std::string backend = "load-store";  // ETHX_SHMEM_BACKEND: load-store or rdma
  std::vector<std::string> env;        // NAME=VALUE
  std::vector<std::string> argv;       // PROGRAM ARGS...
  bool help = false;
};

// Throws boost::program_options::error naming the option (no -np, no program, bad --env, an
// unknown --backend, --backend rdma with --transport shm).
OshrunOptions parse_oshrun_options(const std::vector<std::string>& args);
std::string oshrun_help();
// The program's exit status as `ethx run` reports it; a PE that fails stops the others and is
// named. 2 bad arguments, 1 the VMs could not be booted.
int run_oshrun(const OshrunOptions& options);

}  // namespace ethx
