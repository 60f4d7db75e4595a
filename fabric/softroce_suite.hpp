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
  bool quiet = false;   // no progress on stderr
};

// Never throws for a missing prerequisite: {"available": false, "reason": "..."} instead.
// Schema (docs/softroce.md):
//   {"system": "soft-roce", "transport", "available", "reason",
//    "latency_us": [{"op", "bytes", "p50", "p99"}], "bandwidth_gbps": [{"op", "bytes", "gbps"}],
//    "message_rate_mops": [{"op", "bytes", "batch", "mops"}], "verified", "notes": [...],
//    "details": {"interop": {...}, "runs": [{...every perftest run: command, parsed table...}],
//                "guests", "guests_after_perftest", "elapsed_s"}}
// ("details" is the only key beyond the schema `ethx compare` reads.)
nlohmann::json run_softroce_suite(const SoftRoceOptions& options);

// perftest's result table, parsed: the row whose first column is `bytes`. Latency tests:
// {"bytes","iterations","t_min","t_max","t_typical","t_avg","t_stdev","p99","p99_9"} (µs);
// bandwidth tests: {"bytes","iterations","bw_peak_gbps","bw_avg_gbps","msg_rate_mpps"}.
// Null when no such row is found.
nlohmann::json parse_perftest_output(const std::string& output, std::uint64_t bytes);

}  // namespace ethx
