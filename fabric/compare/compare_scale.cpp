// The scale section of `ethx compare`: the collective patterns of a scale-up domain at growing
// GPU counts, load/store against RoCEv2 behind the RDMA NIC model, all in `ethx sim`.
#include "fabric/compare/compare_model.hpp"
#include "fabric/compare/compare_systems.hpp"
#include "fabric/sim/sim_command.hpp"

namespace ethx {
namespace {

using nlohmann::json;
using sim::SimEngine;
using sim::SimRequest;
using sim::WorkloadKind;

// One row: what the run measured, the NIC's view of it for RoCEv2, and how to repeat it.
json scale_row(const sim::SimReport& report, SimEngine engine, const std::string& command) {
  json row = {{"workload", report.workload},
              {"gpus", report.gpus},
              {"system", engine == SimEngine::kRoce ? kSystemRoceEngine : kSystemLoadStore},
              {"complete", report.complete},
              {"completion_us", static_cast<double>(report.makespan_ps) / 1e6},
              {"p99_ns", static_cast<double>(report.latency_p99_ps) / 1e3},
              {"gbps", report.bandwidth_gbps()},
              {"mops", report.message_rate_mops()},
              {"qps_per_gpu", 0},
              {"qpc_miss_rate", 0.0},
              {"connection_state_bytes_per_gpu", 0},
              {"ops_ok", report.ops_ok},
              {"ops_failed", report.ops_failed},
              {"drops", report.drops},
              {"events", report.events},
              {"command", command}};
  if (report.nic) {
    const sim::RnicCounters& nic = report.nic->counters;
    const std::uint64_t lookups = nic.qpc_hits + nic.qpc_misses;
    row["qps_per_gpu"] = report.nic->max_qps_per_gpu;
    row["qpc_miss_rate"] =
        lookups == 0 ? 0.0 : static_cast<double>(nic.qpc_misses) / static_cast<double>(lookups);
    row["connection_state_bytes_per_gpu"] = report.nic->connection_state_bytes_per_gpu;
  }
  return row;
}

// The patterns, each with the sim's default size: all-to-all (4 KiB to every other GPU),
// incast (every GPU writes 4 KiB to GPU 0) and 8 B writes round robin over every peer.
std::vector<SimRequest> scale_requests() {
  std::vector<SimRequest> requests;
  for (WorkloadKind workload :
       {WorkloadKind::kAllToAll, WorkloadKind::kIncast, WorkloadKind::kMessageRate}) {
    for (SimEngine engine : {SimEngine::kLoadStore, SimEngine::kRoce}) {
      SimRequest request;
      request.workload = workload;
      request.engine = engine;
      request.bytes = sim::default_bytes(workload);
      requests.push_back(request);
    }
  }
  return requests;
}

}  // namespace

json scale_figures(const std::string& config_path, const std::vector<std::size_t>& gpu_counts,
                   const std::function<void(const std::string&)>& progress) {
  json rows = json::array();
  for (std::size_t gpus : gpu_counts) {
    const TopologyConfig config = load_topology(config_path, gpus);
    for (const SimRequest& request : scale_requests()) {
      const std::string command = sim::command_line(gpus, request, config_path);
      progress(command);
      rows.push_back(scale_row(sim::simulate(config, request), request.engine, command));
    }
  }
  return {{"gpu_counts", gpu_counts}, {"rows", rows}};
}

}  // namespace ethx
