// The JSON a node returns for one latency or throughput run: the same keys for every engine
// (load/store and RoCEv2), so the coordinators read them one way.
#pragma once

#include <nlohmann/json.hpp>

#include "fabric/workloads/bench_workloads.hpp"

namespace ethx {

nlohmann::json latency_summary(LatencyRun& run);  // sorts run.samples_ns for the percentiles
nlohmann::json throughput_summary(const ThroughputRun& run);

}  // namespace ethx
