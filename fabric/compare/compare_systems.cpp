#include "fabric/compare/compare_systems.hpp"

#include <algorithm>

namespace ethx {
namespace {

using nlohmann::json;

constexpr double kNsPerUs = 1e3;
constexpr GpuId kRequester = 0;
constexpr GpuId kTarget = 1;

// Load latency by size, GPU 0 -> GPU 1.
void measure_load_latency(FabricClient& client, const SweepPlan& plan, Totals& totals,
                          const std::function<void(const std::string&)>& progress, json& system) {
  progress("load/store: load latency, " + std::to_string(plan.latency_sizes.size()) + " sizes x " +
           std::to_string(plan.latency_samples) + " samples");
  for (std::uint32_t size : plan.latency_sizes) {
    const protocol::LatencyResult run = client.call(
        kRequester,
        protocol::LoadLatencyCommand{
            .peer = kTarget, .count = plan.latency_samples, .bytes = size, .seed = 100 + size});
    totals.add("load latency " + std::to_string(size) + " B", run);
    system["latency_us"].push_back({{"op", "load"},
                                    {"bytes", size},
                                    {"p50", static_cast<double>(run.p50_ns) / kNsPerUs},
                                    {"p99", static_cast<double>(run.p99_ns) / kNsPerUs}});
  }
}

// Posted-store and read bandwidth by size, and the posted-store rate at the smallest size.
void measure_load_store_bandwidth(FabricClient& client, const SweepPlan& plan, Totals& totals,
                                  const std::function<void(const std::string&)>& progress,
                                  json& system) {
  progress("load/store: posted-store and read bandwidth by size");
  for (std::uint32_t size : plan.bandwidth_sizes) {
    const std::uint64_t total = bandwidth_total_bytes(plan, size);
    const protocol::ThroughputResult store = client.call(
        kRequester,
        protocol::StoreBandwidthCommand{
            .peer = kTarget, .size_bytes = size, .total_bytes = total, .salt = 6000 + size});
    totals.add("store bandwidth " + std::to_string(size) + " B", store);
    system["bandwidth_gbps"].push_back({{"op", "write"}, {"bytes", size}, {"gbps", store.gbps}});
    if (size == plan.bandwidth_sizes.front()) {
      // Posted stores need no doorbell: every store is one "message", batch 1.
      system["message_rate_mops"].push_back(
          {{"op", "write"}, {"bytes", size}, {"batch", 1}, {"mops", store.ops_per_second / 1e6}});
    }
    const protocol::ThroughputResult read = client.call(
        kRequester,
        protocol::ReadBandwidthCommand{.peer = kTarget,
                                       .size_bytes = size,
                                       .total_bytes = total,
                                       .outstanding = bandwidth_outstanding(plan, size)});
    totals.add("read bandwidth " + std::to_string(size) + " B", read);
    system["bandwidth_gbps"].push_back({{"op", "read"}, {"bytes", size}, {"gbps", read.gbps}});
  }
}

}  // namespace

json empty_system(const std::string& system, const std::string& transport) {
  return json{{"system", system},
              {"transport", transport},
              {"available", true},
              {"reason", ""},
              {"latency_us", json::array()},
              {"bandwidth_gbps", json::array()},
              {"message_rate_mops", json::array()},
              {"verified", false},
              {"notes", json::array()}};
}

json unavailable_system(const std::string& system, const std::string& transport,
                        const std::string& reason) {
  json result = empty_system(system, transport);
  result["available"] = false;
  result["reason"] = reason;
  return result;
}

json run_load_store_system(FabricClient& client, const TopologyConfig& topology,
                           const SweepPlan& plan, const std::string& transport, Totals& totals,
                           const std::function<void(const std::string&)>& progress) {
  json system = empty_system(kSystemLoadStore, transport);
  const std::uint64_t before = totals.mismatches + totals.errors;
  measure_load_latency(client, plan, totals, progress, system);
  measure_load_store_bandwidth(client, plan, totals, progress, system);
  progress("load/store: all-to-all posted stores across " + std::to_string(topology.gpu_count) +
           " GPUs");
  std::vector<std::pair<GpuId, protocol::AllToAllStoreCommand>> stores;
  std::vector<std::pair<GpuId, protocol::AllToAllVerifyCommand>> verifies;
  const std::uint64_t salt = 6077;
  for (std::size_t gpu = 0; gpu < topology.gpu_count; ++gpu) {
    stores.emplace_back(static_cast<GpuId>(gpu),
                        protocol::AllToAllStoreCommand{plan.all_to_all_bytes_per_peer, salt});
    verifies.emplace_back(static_cast<GpuId>(gpu),
                          protocol::AllToAllVerifyCommand{plan.all_to_all_bytes_per_peer, salt});
  }
  const std::vector<protocol::ThroughputResult> runs = client.call_parallel(stores);
  for (const protocol::ThroughputResult& run : runs) totals.add("all-to-all store", run);
  for (const protocol::ThroughputResult& run : client.call_parallel(verifies)) {
    totals.add("all-to-all verify", run);
  }
  system["all_to_all_gbps"] = aggregate_gbps(runs);
  system["verified"] = totals.mismatches + totals.errors == before;
  system["notes"].push_back(
      "bandwidth op \"write\" is posted stores (flushed, then read back); \"read\" is loads with " +
      std::to_string(plan.outstanding) + " outstanding, at most " +
      std::to_string(kMaxInflightBytes / 1024) + " KiB in flight");
  return system;
}

json roce_system_from_suite(const json& suite, const std::string& transport, bool verified) {
  json system = empty_system(kSystemRoceEngine, transport);
  for (const char* op : {"write", "read"}) {
    for (const auto& [size, figures] : suite[std::string(op) + "_latency_ns"].items()) {
      system["latency_us"].push_back({{"op", op},
                                      {"bytes", std::stoull(size)},
                                      {"p50", figures["p50"].get<double>() / kNsPerUs},
                                      {"p99", figures["p99"].get<double>() / kNsPerUs}});
    }
    for (const auto& [size, gbps] : suite[std::string(op) + "_bandwidth_gbps"].items()) {
      system["bandwidth_gbps"].push_back(
          {{"op", op}, {"bytes", std::stoull(size)}, {"gbps", gbps}});
    }
  }
  // "batch_<N>" keys, in numeric order of N.
  std::vector<std::pair<std::uint64_t, double>> rates;
  for (const auto& [batch, mops] : suite["message_rate_mops"].items()) {
    rates.emplace_back(std::stoull(batch.substr(std::string("batch_").size())), mops.get<double>());
  }
  std::sort(rates.begin(), rates.end());
  for (const auto& [batch, mops] : rates) {
    system["message_rate_mops"].push_back(
        {{"op", "write"}, {"bytes", 8}, {"batch", batch}, {"mops", mops}});
  }
  system["all_to_all_gbps"] = suite["all_to_all_gbps"];
  system["many_qps"] = suite["many_qps"];
  system["path_mtu_bytes"] = suite["path_mtu_bytes"];
  system["verified"] = verified;
  system["notes"].push_back("RC queue pairs, path MTU " +
                            std::to_string(suite["path_mtu_bytes"].get<int>()) +
                            " B; every WRITE read back with RDMA READ, every READ checked");
  return system;
}

}  // namespace ethx
