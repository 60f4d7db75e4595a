// What a benchmark suite adds up over its runs: verified operations, mismatches and errors,
// and which runs failed (so a non-zero exit names them); and the aggregate rate of runs made
// on several GPUs at once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "fabric/node/node_protocol.hpp"

namespace ethx {

struct Totals {
  std::uint64_t verified_ops = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t errors = 0;
  std::vector<std::string> failed_runs;  // which runs saw mismatches or errors

  // A node's result with verification counts (node_protocol.hpp: LatencyResult,
  // ThroughputResult, SoakResult, ...).
  template <class Run>
  void add(const std::string& name, const Run& run) {
    add_counts(name, run.verified_ops, run.mismatches, run.errors);
  }

  void add_counts(const std::string& name, std::uint64_t run_verified_ops,
                  std::uint64_t run_mismatches, std::uint64_t run_errors) {
    verified_ops += run_verified_ops;
    mismatches += run_mismatches;
    errors += run_errors;
    if (run_mismatches + run_errors > 0) {
      failed_runs.push_back(name + ": " + std::to_string(run_mismatches) + " mismatches, " +
                            std::to_string(run_errors) + " errors");
    }
  }
};

// Payload Gbit/s of runs made at once on several GPUs: all their bytes over the span from the
// first start to the last end (the nodes share one clock); 0 for no span.
inline double aggregate_gbps(const std::vector<protocol::ThroughputResult>& runs) {
  std::uint64_t first_start = UINT64_MAX, last_end = 0, all_bytes = 0;
  for (const protocol::ThroughputResult& run : runs) {
    first_start = std::min(first_start, run.start_ns);
    last_end = std::max(last_end, run.end_ns);
    all_bytes += run.payload_bytes;
  }
  return last_end > first_start
             ? static_cast<double>(all_bytes) * 8.0 / static_cast<double>(last_end - first_start)
             : 0.0;
}

}  // namespace ethx
