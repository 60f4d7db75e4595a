#include "fabric/compare/compare_model.hpp"

#include <algorithm>

#include "fabric/compare/compare_systems.hpp"
#include "fabric/sim/sim_command.hpp"

namespace ethx {
namespace {

using nlohmann::json;
using sim::SimEngine;
using sim::SimRequest;
using sim::WorkloadKind;

// Each figure's system: the load/store engine, or the RoCEv2 engine behind the NIC model.
const char* system_of(SimEngine engine) {
  return engine == SimEngine::kRoce ? kSystemRoceEngine : kSystemLoadStore;
}

// One simulated figure and how to repeat it.
struct ModelRun {
  sim::SimReport report;
  std::string command;
};

ModelRun run_two_gpus(const ModelRequest& model, const SimRequest& request) {
  return {sim::simulate(model.config, request),
          sim::command_line(model.config.gpu_count, request, model.config_path)};
}

SimRequest request_of(SimEngine engine, WorkloadKind workload, std::uint64_t bytes) {
  SimRequest request;
  request.engine = engine;
  request.workload = workload;
  request.bytes = bytes;
  return request;
}

json parameters(const TopologyConfig& config) {
  const RnicConfig& nic = config.rnic;
  return {{"link_rate_gbps", config.link_rate_gbps},
          {"link_propagation_ns", config.link_propagation_ns},
          {"switch_forwarding_latency_ns", config.switch_forwarding_latency_ns},
          {"nic_latency_ns", config.sim_nic_latency_ns},
          {"completer_ns", config.sim_completer_ns},
          {"issue_ns", config.sim_issue_ns},
          {"rnic_doorbell_ns", nic.doorbell_ns},
          {"rnic_inline_wqe", nic.inline_wqe},
          {"rnic_pcie_rtt_ns", nic.pcie_rtt_ns},
          {"rnic_qpc_cache_entries", nic.qpc_cache_entries},
          {"rnic_processing_units", nic.processing_units},
          {"rnic_packet_ns", nic.packet_ns}};
}

json sources() {
  return {
      // One literal per source, split over lines: the adjacent pieces are meant to join.
      // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
      "every figure is `ethx sim` (the real requester/completer/switch code, and the real RoCEv2 "
      "engine behind the RDMA NIC model, in modelled time; docs/simulator.md); each row's "
      "`command` reproduces it",
      "link, switch, NIC and completer timing: the topology config's [link], [switch] and [sim] "
      "values; the RDMA NIC (doorbell, WQE and payload DMA over PCIe, QPC/MPT/MTT caches, "
      "processing units, CQE): [rnic]; docs/timing-model.md gives each value's public source "
      "or marks it an assumption, docs/validation.md holds the results against published "
      "measurements",
      "latency: p50 of one operation at a time (read-latency / write-latency), 2 GPUs; "
      "load/store writes are non-posted (completed by the write's acknowledgement)",
      "bandwidth: one GPU streaming operations of the size to another (incast on 2 GPUs, up to "
      "max_outstanding in flight), payload bits over the time to the last completion",
      "message rate: 8 B operations between 2 GPUs, each issuing 1000 (message-rate --peers 1); "
      "the scale section has it over every peer"};
}

json latency_rows(const ModelRequest& model) {
  json rows = json::array();
  struct Op {
    SimEngine engine;
    WorkloadKind workload;
    const char* name;
  };
  const Op ops[] = {{SimEngine::kLoadStore, WorkloadKind::kLoadLatency, "load"},
                    {SimEngine::kLoadStore, WorkloadKind::kWriteLatency, "write"},
                    {SimEngine::kRoce, WorkloadKind::kWriteLatency, "write"},
                    {SimEngine::kRoce, WorkloadKind::kReadLatency, "read"}};
  for (std::uint32_t bytes : model.sizes) {
    for (const Op& op : ops) {
      const ModelRun run = run_two_gpus(model, request_of(op.engine, op.workload, bytes));
      rows.push_back({{"system", system_of(op.engine)},
                      {"op", op.name},
                      {"bytes", bytes},
                      {"ns", static_cast<double>(run.report.latency_p50_ps) / 1e3},
                      {"command", run.command}});
    }
  }
  return rows;
}

json bandwidth_rows(const ModelRequest& model) {
  json rows = json::array();
  for (std::uint32_t bytes : model.sizes) {
    for (SimEngine engine : {SimEngine::kLoadStore, SimEngine::kRoce}) {
      for (bool reads : {false, true}) {
        SimRequest request = request_of(engine, WorkloadKind::kIncast, bytes);
        request.repeat = stream_operations(bytes);
        request.reads = reads;
        const ModelRun run = run_two_gpus(model, request);
        rows.push_back({{"system", system_of(engine)},
                        {"op", reads ? "read" : "write"},
                        {"bytes", bytes},
                        {"gbps", run.report.bandwidth_gbps()},
                        {"command", run.command}});
      }
    }
  }
  return rows;
}

json message_rate_rows(const ModelRequest& model) {
  json rows = json::array();
  for (SimEngine engine : {SimEngine::kLoadStore, SimEngine::kRoce}) {
    for (bool reads : {false, true}) {
      SimRequest request = request_of(engine, WorkloadKind::kMessageRate, 8);
      request.peers = 1;
      request.reads = reads;
      const ModelRun run = run_two_gpus(model, request);
      rows.push_back({{"system", system_of(engine)},
                      {"op", reads ? "read" : "write"},
                      {"bytes", 8},
                      {"peers", 1},
                      {"mops", run.report.message_rate_mops()},
                      {"command", run.command}});
    }
  }
  return rows;
}

}  // namespace

std::uint64_t stream_operations(std::uint64_t bytes) {
  constexpr std::uint64_t kStreamBytes = std::uint64_t{16} << 20;
  return std::clamp<std::uint64_t>(kStreamBytes / std::max<std::uint64_t>(1, bytes), 256, 20000);
}

json model_figures(const ModelRequest& request) {
  json model;
  model["parameters"] = parameters(request.config);
  model["sources"] = sources();
  model["latency_ns"] = latency_rows(request);
  model["bandwidth_gbps"] = bandwidth_rows(request);
  model["message_rate_mops"] = message_rate_rows(request);
  return model;
}

}  // namespace ethx
