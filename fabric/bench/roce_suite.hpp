// The RoCEv2 benchmark suite over a running fabric: connects queue pairs between nodes by
// exchanging QPN, PSN, rkey, MAC and IPv4 through the coordinator (out of band, as RDMA
// applications do), then runs latency, bandwidth, message rate (with and without doorbell
// batching), many-QP and all-to-all measurements with data verification. Used by
// `ethx bench --engine roce` and `ethx compare`.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fabric/bench/bench_totals.hpp"
#include "fabric/control/fabric_client.hpp"
#include "fabric/config/topology_config.hpp"

namespace ethx {

struct RoceSuitePlan {
  std::vector<std::uint32_t> latency_sizes;
  std::uint32_t latency_samples = 0;
  std::vector<std::uint32_t> bandwidth_sizes;
  std::uint64_t bandwidth_ops = 0;  // per size, bounded by the byte limits below
  std::uint64_t bandwidth_min_bytes = 0;
  std::uint64_t bandwidth_max_bytes = 0;
  std::uint32_t outstanding = 32;
  std::uint64_t rate_count = 0;  // small WRITEs per message-rate run
  std::vector<std::uint32_t> batches;
  std::vector<std::uint32_t> qp_counts;  // many-QP runs
  std::uint64_t all_to_all_bytes_per_peer = 0;
};

// --quick: pinned sizes and counts that finish in well under a minute on 2 cores.
RoceSuitePlan roce_suite_plan(bool quick);

// Total bytes of one bandwidth run of `size` bytes per WR under `plan`.
std::uint64_t bandwidth_total_bytes(const RoceSuitePlan& plan, std::uint32_t size);

// Transfers in flight in a bandwidth run of `size`: plan.outstanding, but at most
// kMaxInflightBytes of payload. Both systems get the same depth: neither has flow control for
// responses here, and deeper bursts of 64 KiB reads overflow the switch's egress queues.
inline constexpr std::uint64_t kMaxInflightBytes = std::uint64_t{128} * 1024;
std::uint32_t bandwidth_outstanding(const RoceSuitePlan& plan, std::uint32_t size);

// Connects `count` QP pairs between GPUs a and b (each side creates, then connects to the
// other's parameters). Returns the parameters both sides reported.
nlohmann::json connect_roce_pair(FabricClient& client, GpuId a, GpuId b, std::size_t count);

// Runs the suite between GPU 0 and 1 (and all-to-all over every GPU). The report's keys are
// documented in docs/roce.md; `progress` gets one line per phase.
nlohmann::json run_roce_suite(FabricClient& client, const TopologyConfig& topology,
                              const RoceSuitePlan& plan, Totals& totals,
                              const std::function<void(const std::string&)>& progress);

}  // namespace ethx
