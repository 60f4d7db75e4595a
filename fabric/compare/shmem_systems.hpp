// The OpenSHMEM pair of `ethx compare` (docs/shmem.md, docs/compare.md): one benchmark binary,
// tests/shmem/shmem_bench, run in the Soft-RoCE suite's VMs twice — over the fabric's
// load/store windows (ETHX_SHMEM_BACKEND=load-store) and over libibverbs on the guests'
// Soft-RoCE (rdma) — as the systems `ethx-shmem-load-store` and `ethx-shmem-rdma`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace ethx {

inline constexpr const char* kSystemShmemLoadStore = "ethx-shmem-load-store";
inline constexpr const char* kSystemShmemRdma = "ethx-shmem-rdma";

struct ShmemRunPlan {
  std::string log_directory;  // the VMs' (their agents' sockets)
  std::size_t vms = 2;        // PE k runs on GPU k, in VM k / gpus_per_vm, as oshrun puts it
  std::size_t gpus_per_vm = 1;
  std::string transport;  // the GPU ports', for the systems' "transport"
  bool quick = true;      // shmem_bench --quick
  std::string bench;      // the binary; empty: shmem_bench_path()
};

// build/tests/shmem/shmem_bench next to this build's bin/ (ETHX_SHMEM_BENCH overrides).
std::string shmem_bench_path();

// Both systems, load-store first: every PE of the VMs runs the benchmark through its VM's
// agent with the environment oshrun gives (PE 0 listens on VM 0's guest NIC for rdma). A run
// that fails makes its system unavailable with the reason; never throws for that.
nlohmann::json run_shmem_systems(const ShmemRunPlan& plan,
                                 const std::function<void(const std::string&)>& progress);

// shmem_bench's JSON report (PE 0's) as a system object: latency_us "put" (putmem + quiet),
// "get", "p" (long_p + quiet), "g" (long_g), "fetch-add"; bandwidth_gbps "put", "get";
// message_rate_mops "fetch-add"; all_to_all_gbps (the largest block); verified when the run
// exited 0 and reported 0 mismatches. `error` non-empty: unavailable, with it as the reason.
nlohmann::json shmem_system_from_bench(const std::string& system, const std::string& transport,
                                       const nlohmann::json& report, bool exited_ok,
                                       const std::string& error);

}  // namespace ethx
