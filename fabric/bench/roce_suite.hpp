// The RoCEv2 benchmark suite over a running fabric: connects queue pairs between nodes by
// exchanging QPN, PSN, rkey, MAC and IPv4 through the coordinator (out of band, as RDMA
// applications do), then runs latency, bandwidth, message rate (with and without doorbell
// batching), many-QP and all-to-all measurements with data verification. Used by
// `ethx bench --engine roce` and `ethx compare`; the sizes and counts are bench_plan.hpp's.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "fabric/bench/bench_plan.hpp"
#include "fabric/bench/bench_totals.hpp"
#include "fabric/config/topology_config.hpp"
#include "fabric/control/fabric_client.hpp"

namespace ethx {

// What both GPUs of a connected pair reported when they created their QPs.
struct RocePair {
  protocol::RoceCreateResult a;
  protocol::RoceCreateResult b;
};

// Connects `count` QP pairs between GPUs a and b (each side creates, then connects to the
// other's parameters).
RocePair connect_roce_pair(FabricClient& client, GpuId a, GpuId b, std::size_t count);

// Runs the suite between GPU 0 and 1 (and all-to-all over every GPU). The report's keys are
// documented in docs/roce.md; `progress` gets one line per phase.
nlohmann::json run_roce_suite(FabricClient& client, const TopologyConfig& topology,
                              const SweepPlan& plan, Totals& totals,
                              const std::function<void(const std::string&)>& progress);

}  // namespace ethx
