// The Soft-RoCE side of `ethx compare` (docs/softroce.md): two VMs whose NICs are ports of the
// ethx switch (taps), rdma_rxe in each, perftest between them with pinned sizes and iteration
// counts, and the interop check of ethx's RoCEv2 engine against rdma_rxe. `ethx softroce` runs
// it alone.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace ethx {

struct SoftRoceOptions {
  bool quick = false;  // fewer sizes and iterations: a few minutes under TCG
  // The fabric's transport for the GPUs' ports (the guest NICs always use AF_PACKET on their
  // taps): "auto" (AF_XDP when privileged), "afxdp" or "afpacket".
  std::string transport = "auto";
  // Use this fabric if it is up with `--vms 2 --guest-nics` (or more VMs); else boot two
  // temporary VMs and remove them afterwards.
  std::string fabric = "default";
  // Runs still to start after this many seconds are skipped (named in "notes").
  double time_budget_s = 600;
  bool interop = true;  // also the engine <-> rdma_rxe WRITE/READ check
  // Also shmem_bench over both OpenSHMEM backends in the same VMs (details.same_vms_shmem).
  bool shmem = true;
  bool quiet = false;  // no progress on stderr
};

// Never throws for a missing prerequisite: {"available": false, "reason": "..."} instead.
// Schema (docs/softroce.md):
//   {"system": "soft-roce", "transport", "available", "reason",
//    "latency_us": [{"op", "bytes", "p50", "p99"}], "bandwidth_gbps": [{"op", "bytes", "gbps"}],
//    "message_rate_mops": [{"op", "bytes", "batch", "mops"}], "verified", "notes": [...],
//    "details": {"interop": {...}, "runs": [{...every perftest run: command, parsed table...}],
//                "guests", "guests_after_perftest", "elapsed_s",
//                "same_vms_load_store": {...}, "same_vms_shmem": [{...}, {...}]}}
// ("details" is the only key beyond the schema `ethx compare` reads.)
// details.same_vms_load_store is a second system object of the same schema,
// "system": "ethx-load-store-vm": `ethx-guest bench` in the same two VMs, VM 0's GPU loading
// from and storing to VM 1's GPU through its window (and the reverse, in its details).
// details.same_vms_shmem holds the systems "ethx-shmem-load-store" and "ethx-shmem-rdma": one
// OpenSHMEM benchmark binary over the two backends in the same VMs (shmem_systems.hpp).
nlohmann::json run_softroce_suite(const SoftRoceOptions& options);

// The same-VM load/store system from `ethx-guest bench --json` results: `forward` from VM 0's
// GPU against VM 1's (the figures), `reverse` the other way (its details; null when not run).
// `error` names a bench that failed to run. Ops: "load" latency (µs), "store" and "copy"
// bandwidth (Gbit/s); verified only when every bench reported 0 mismatches and 0 errors.
nlohmann::json load_store_vm_system(const nlohmann::json& forward, const nlohmann::json& reverse,
                                    const std::string& transport, const std::string& accel,
                                    const std::string& error);

// perftest's result table, parsed: the row whose first column is `bytes`. Latency tests:
// {"bytes","iterations","t_min","t_max","t_typical","t_avg","t_stdev","p99","p99_9"} (µs);
// bandwidth tests: {"bytes","iterations","bw_peak_gbps","bw_avg_gbps","msg_rate_mpps"}.
// Null when no such row is found.
nlohmann::json parse_perftest_output(const std::string& output, std::uint64_t bytes);

}  // namespace ethx
