#include "fabric/workloads/run_summary.hpp"

#include "fabric/platform/stats.hpp"

namespace ethx {

protocol::LatencyResult latency_summary(LatencyRun& run) {
  protocol::LatencyResult result;
  result.p50_ns = percentile(run.samples_ns, 50);
  result.p99_ns = percentile(run.samples_ns, 99);
  result.samples = run.samples_ns.size();
  result.verified_ops = run.verified_ops;
  result.mismatches = run.mismatches;
  result.errors = run.errors;
  return result;
}

protocol::ThroughputResult throughput_summary(const ThroughputRun& run) {
  protocol::ThroughputResult result;
  result.payload_bytes = run.payload_bytes;
  result.ops = run.ops;
  result.start_ns = run.start_ns;
  result.end_ns = run.end_ns;
  result.gbps = run.gbps();
  result.ops_per_second = run.ops_per_second();
  result.verified_ops = run.verified_ops;
  result.mismatches = run.mismatches;
  result.errors = run.errors;
  return result;
}

}  // namespace ethx
