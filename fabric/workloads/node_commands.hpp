// Commands a node process accepts from the benchmark coordinator (JSON in, JSON out).
#pragma once

#include <string>

#include "fabric/workloads/bench_workloads.hpp"
#include "fabric/node/node_runtime.hpp"

namespace ethx {

// Runs one command and returns its JSON result. Never throws: a bad command or a failure
// comes back as {"error": "..."}.
std::string run_node_command(const std::string& command_json, NodeRuntime& node,
                             BenchWorkloads& workloads);

}  // namespace ethx
