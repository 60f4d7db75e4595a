// The RoCEv2 commands a node accepts from the coordinator (node_protocol.hpp, ops "roce_*"):
// queue pair setup with out-of-band parameters (create, connect, destroy), the benchmarks of
// roce_bench_workloads.hpp, and the engine's state and counters. docs/roce.md lists them.
#pragma once

#include "fabric/node/node_protocol.hpp"
#include "fabric/node/node_runtime.hpp"
#include "fabric/workloads/bench_workloads.hpp"
#include "fabric/workloads/roce_bench_workloads.hpp"

namespace ethx {

// One RoCE command on this node, one operator() per command. Made per command: a benchmark
// result names the first failed completion of that command only. Throws (naming the field)
// on arguments the node cannot use; run_node_command turns that into {"error": ...}.
class RoceCommands {
 public:
  RoceCommands(NodeRuntime& node, const BenchLayout& layout);

  protocol::RoceInfo operator()(const protocol::RoceInfoCommand& command);
  protocol::RoceInfo operator()(const protocol::RoceStatsCommand& command);
  protocol::RoceCreateResult operator()(const protocol::RoceCreateCommand& command);
  protocol::RoceConnectResult operator()(const protocol::RoceConnectCommand& command);
  protocol::RoceDestroyResult operator()(const protocol::RoceDestroyCommand& command);
  protocol::LatencyResult operator()(const protocol::RoceLatencyCommand& command);
  protocol::ThroughputResult operator()(const protocol::RoceBandwidthCommand& command);
  protocol::RoceMessageRateResult operator()(const protocol::RoceMessageRateCommand& command);
  protocol::BadRkeyProbeResult operator()(const protocol::RoceBadRkeyProbeCommand& command);
  protocol::ThroughputResult operator()(const protocol::RoceAllToAllWriteCommand& command);
  protocol::ThroughputResult operator()(const protocol::RoceAllToAllVerifyCommand& command);

 private:
  protocol::RoceInfo info() const;
  // A benchmark's result, naming the first failed completion's status if any.
  template <class Result>
  Result with_first_error(Result result) const {
    result.first_error = workloads_.first_error();
    return result;
  }

  RoceHost& roce_;
  RoceBenchWorkloads workloads_;
};

}  // namespace ethx
