// A node's result for one latency or throughput run (node_protocol.hpp): the same struct for
// every engine (load/store and RoCEv2), so the coordinators read them one way.
#pragma once

#include "fabric/node/node_protocol.hpp"
#include "fabric/workloads/bench_workloads.hpp"

namespace ethx {

protocol::LatencyResult latency_summary(LatencyRun& run);  // sorts run.samples_ns
protocol::ThroughputResult throughput_summary(const ThroughputRun& run);

}  // namespace ethx
