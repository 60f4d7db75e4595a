#include "fabric/workloads/run_summary.hpp"

#include "fabric/platform/stats.hpp"

namespace ethx {

nlohmann::json latency_summary(LatencyRun& run) {
  return nlohmann::json{{"p50_ns", percentile(run.samples_ns, 50)},
                        {"p99_ns", percentile(run.samples_ns, 99)},
                        {"samples", run.samples_ns.size()},
                        {"verified_ops", run.verified_ops},
                        {"mismatches", run.mismatches},
                        {"errors", run.errors}};
}

nlohmann::json throughput_summary(const ThroughputRun& run) {
  return nlohmann::json{{"payload_bytes", run.payload_bytes},
                        {"ops", run.ops},
                        {"start_ns", run.start_ns},
                        {"end_ns", run.end_ns},
                        {"gbps", run.gbps()},
                        {"ops_per_second", run.ops_per_second()},
                        {"verified_ops", run.verified_ops},
                        {"mismatches", run.mismatches},
                        {"errors", run.errors}};
}

}  // namespace ethx
