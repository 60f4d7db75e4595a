// The RoCEv2 commands a node accepts from the coordinator (ops named "roce_*"): queue pair
// setup with out-of-band parameters (create, connect, destroy), the benchmarks of
// roce_bench_workloads.hpp, and the engine's state and counters. docs/roce.md lists them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "fabric/workloads/bench_workloads.hpp"
#include "fabric/node/node_runtime.hpp"

namespace ethx {

// The result of `command` if its "op" is a RoCE command, nullopt otherwise. Throws (with the
// field named) on bad arguments; run_node_command turns that into {"error": ...}.
std::optional<nlohmann::json> run_roce_command(const std::string& op, const nlohmann::json& command,
                                               NodeRuntime& node, const BenchLayout& layout);

}  // namespace ethx
