// Commands a node process accepts from the coordinators (fabric/node/node_protocol.hpp):
// parsed into their structs, run on this node, answered with their result structs.
#pragma once

#include <string>

#include "fabric/node/node_runtime.hpp"
#include "fabric/workloads/bench_workloads.hpp"

namespace ethx {

// Runs one command and returns its JSON result. Never throws: a malformed command or a failure
// comes back as {"error": "..."} (protocol::error_json), naming the field when one is wrong.
std::string run_node_command(const std::string& command_json, NodeRuntime& node,
                             BenchWorkloads& workloads);

}  // namespace ethx
