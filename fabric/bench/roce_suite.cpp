#include "fabric/bench/roce_suite.hpp"

#include <algorithm>

#include "fabric/bench/compare_wire.hpp"

namespace ethx {
namespace {

using nlohmann::json;

std::string key(std::uint64_t value) {
  return std::to_string(value);
}

}  // namespace

RoceSuitePlan roce_suite_plan(bool quick) {
  RoceSuitePlan plan;
  if (quick) {
    plan.latency_sizes = {8, 64, 512, 4096, 65536};
    plan.latency_samples = 200;
    plan.bandwidth_sizes = {8, 64, 512, 4096, 65536};
    plan.bandwidth_ops = 2000;
    plan.bandwidth_min_bytes = 64ull << 10;
    plan.bandwidth_max_bytes = 4ull << 20;
    plan.rate_count = 5000;
    plan.batches = {1, 16};
    plan.qp_counts = {1, 16, 256};
    plan.all_to_all_bytes_per_peer = 256ull << 10;
  } else {
    plan.latency_sizes = {8, 64, 256, 1024, 4096, 16384, 65536};
    plan.latency_samples = 1000;
    plan.bandwidth_sizes = {8, 64, 256, 1024, 4096, 16384, 65536};
    plan.bandwidth_ops = 10000;
    plan.bandwidth_min_bytes = 256ull << 10;
    plan.bandwidth_max_bytes = 16ull << 20;
    plan.rate_count = 50000;
    plan.batches = {1, 4, 16, 64};
    plan.qp_counts = {1, 16, 256, 1024};
    plan.all_to_all_bytes_per_peer = 1ull << 20;
  }
  return plan;
}

std::uint64_t bandwidth_total_bytes(const RoceSuitePlan& plan, std::uint32_t size) {
  return std::clamp<std::uint64_t>(plan.bandwidth_ops * size, plan.bandwidth_min_bytes,
                                   plan.bandwidth_max_bytes) /
         size * size;
}

std::uint32_t bandwidth_outstanding(const RoceSuitePlan& plan, std::uint32_t size) {
  return static_cast<std::uint32_t>(
      std::clamp<std::uint64_t>(kMaxInflightBytes / size, 1, plan.outstanding));
}

json connect_roce_pair(FabricClient& client, GpuId a, GpuId b, std::size_t count) {
  // Step 1: each side creates its QPs and reports QPN, PSN, rkey, MAC and IPv4 ...
  const json side_a = client.run(a, {{"op", "roce_create"}, {"peer", b}, {"count", count}});
  const json side_b = client.run(b, {{"op", "roce_create"}, {"peer", a}, {"count", count}});
  // ... step 2: each side connects to what the other reported.
  // Connects in chunks: a command must fit the 4 KiB mailbox (control_region.hpp).
  constexpr std::size_t kQpsPerCommand = 64;
  auto connect = [&client](GpuId self, GpuId peer, const json& mine, const json& theirs) {
    const json& local_qps = mine["created"];
    const json& remote_qps = theirs["created"];
    for (std::size_t first = 0; first < local_qps.size(); first += kQpsPerCommand) {
      json local = json::array(), qpns = json::array(), psns = json::array();
      for (std::size_t n = first; n < std::min(local_qps.size(), first + kQpsPerCommand); ++n) {
        local.push_back(local_qps[n]["qpn"]);
        qpns.push_back(remote_qps[n]["qpn"]);
        psns.push_back(remote_qps[n]["psn"]);
      }
      client.run(self, {{"op", "roce_connect"},
                        {"peer", peer},
                        {"local_qpns", local},
                        {"remote_qpns", qpns},
                        {"remote_psns", psns},
                        {"remote_mac", theirs["mac"]},
                        {"remote_ip", theirs["ip"]},
                        {"remote_rkey", theirs["rkey"]}});
    }
  };
  connect(a, b, side_a, side_b);
  connect(b, a, side_b, side_a);
  return json{{"a", side_a}, {"b", side_b}};
}

json run_roce_suite(FabricClient& client, const TopologyConfig& topology, const RoceSuitePlan& plan,
                    Totals& totals, const std::function<void(const std::string&)>& progress) {
  const GpuId requester = 0;
  const GpuId target = 1;
  json report;
  progress("RoCE: connecting one RC queue pair GPU 0 <-> GPU 1 (QPN/PSN/rkey out of band)");
  const json pair = connect_roce_pair(client, requester, target, 1);
  std::size_t connected_qps = 1;
  auto disconnect = [&] {
    client.run(requester, {{"op", "roce_destroy"}, {"peer", target}});
    client.run(target, {{"op", "roce_destroy"}, {"peer", requester}});
  };
  // Adds a run to the totals (naming the first failed completion's status). A failed WR
  // leaves an RC QP in the error state, flushing everything after it, so the pair is
  // reconnected: one failure is counted once, not in every later run.
  auto record = [&](const std::string& name, const json& run) {
    totals.add(run.contains("first_error")
                   ? name + " (first failure: " + run["first_error"].get<std::string>() + ")"
                   : name,
               run);
    if (run.value("errors", std::uint64_t{0}) > 0) {
      disconnect();
      connect_roce_pair(client, requester, target, connected_qps);
    }
  };
  report["path_mtu_bytes"] = pair["a"]["path_mtu_bytes"];
  report["addresses"] = {{"gpu0", {{"mac", pair["a"]["mac"]}, {"ip", pair["a"]["ip_text"]}}},
                         {"gpu1", {{"mac", pair["b"]["mac"]}, {"ip", pair["b"]["ip_text"]}}}};

  progress("RoCE: WRITE and READ latency, " + std::to_string(plan.latency_sizes.size()) +
           " sizes x " + std::to_string(plan.latency_samples) + " samples");
  for (const char* op : {"write", "read"}) {
    json by_size = json::object();
    for (std::uint32_t size : plan.latency_sizes) {
      const json run = client.run(requester, {{"op", "roce_latency"},
                                              {"peer", target},
                                              {"rdma_op", op},
                                              {"bytes", size},
                                              {"count", plan.latency_samples},
                                              {"seed", 100 + size}});
      record(std::string("RoCE ") + op + " latency " + key(size) + " B", run);
      by_size[key(size)] = {{"p50", run["p50_ns"]}, {"p99", run["p99_ns"]}};
    }
    report[std::string(op) + "_latency_ns"] = by_size;
  }

  progress("RoCE: WRITE and READ bandwidth, " + key(plan.bandwidth_sizes.front()) + " B .. " +
           key(plan.bandwidth_sizes.back()) + " B, up to " + key(plan.outstanding) +
           " outstanding");
  for (const char* op : {"write", "read"}) {
    json by_size = json::object();
    for (std::uint32_t size : plan.bandwidth_sizes) {
      const json run = client.run(requester, {{"op", "roce_bandwidth"},
                                              {"peer", target},
                                              {"rdma_op", op},
                                              {"bytes", size},
                                              {"total_bytes", bandwidth_total_bytes(plan, size)},
                                              {"outstanding", bandwidth_outstanding(plan, size)},
                                              {"salt", 2000 + size}});
      record(std::string("RoCE ") + op + " bandwidth " + key(size) + " B", run);
      by_size[key(size)] = run["gbps"];
    }
    report[std::string(op) + "_bandwidth_gbps"] = by_size;
  }

  progress("RoCE: 8 B WRITE message rate, doorbell per WR and batched");
  json rates = json::object();
  for (std::uint32_t batch : plan.batches) {
    const json run = client.run(requester, {{"op", "roce_message_rate"},
                                            {"peer", target},
                                            {"bytes", 8},
                                            {"count", plan.rate_count},
                                            {"batch", batch},
                                            {"outstanding", std::max<std::uint32_t>(64, batch)},
                                            {"salt", 3000 + batch}});
    record("RoCE message rate, batch " + key(batch), run);
    rates["batch_" + key(batch)] = run["ops_per_second"].get<double>() / 1e6;
  }
  report["message_rate_mops"] = rates;

  progress("RoCE: many queue pairs (per-connection state and message rate)");
  json many = json::array();
  const std::uint32_t many_batch = plan.batches.back();
  for (std::size_t qps : plan.qp_counts) {
    disconnect();
    connected_qps = qps;
    connect_roce_pair(client, requester, target, qps);
    const json info = client.run(requester, {{"op", "roce_info"}});
    const json run = client.run(
        requester, {{"op", "roce_message_rate"},
                    {"peer", target},
                    {"bytes", 8},
                    {"count", plan.rate_count},
                    {"batch", many_batch},
                    {"outstanding", std::max<std::uint64_t>(64, std::uint64_t{many_batch} * 4)},
                    {"salt", 4000 + qps}});
    record("RoCE many QPs, " + key(qps) + " QPs", run);
    many.push_back({{"qps", qps},
                    {"state_bytes_total", info["qp_state_bytes_total"]},
                    {"state_bytes_per_qp", info["qp_state_bytes_per_qp"]},
                    {"batch", many_batch},
                    {"message_rate_mops", run["ops_per_second"].get<double>() / 1e6}});
  }
  report["many_qps"] = many;
  disconnect();

  progress("RoCE: a READ and a WRITE with a wrong rkey (NAK, counted, target unchanged)");
  connect_roce_pair(client, requester, target, 3);
  const json before = client.run(target, {{"op", "roce_stats"}})["counters"];
  const json probe = client.run(requester, {{"op", "roce_bad_rkey_probe"}, {"peer", target}});
  const json after = client.run(target, {{"op", "roce_stats"}})["counters"];
  const auto delta = [&](const char* name) {
    return after[name].get<std::uint64_t>() - before[name].get<std::uint64_t>();
  };
  // Both WRs must fail with a remote access error, the target must have NAKed and counted
  // both bad keys, and its memory must read back unchanged; anything else is an error.
  const bool rkey_ok = probe["read_status"] == "remote-access-error" &&
                       probe["write_status"] == "remote-access-error" &&
                       delta("access_naks_sent") == 2 && delta("access_bad_rkey") == 2 &&
                       probe["target_mismatches"] == 0 && probe["errors"] == 0;
  report["bad_rkey"] = {{"read_status", probe["read_status"]},
                        {"write_status", probe["write_status"]},
                        {"target_access_naks_sent", delta("access_naks_sent")},
                        {"target_access_bad_rkey", delta("access_bad_rkey")},
                        {"target_memory_unchanged", probe["target_mismatches"] == 0},
                        {"ok", rkey_ok}};
  totals.add("RoCE wrong-rkey probe",
             json{{"verified_ops", rkey_ok ? 2 : 0}, {"errors", rkey_ok ? 0 : 1}});
  disconnect();

  progress("RoCE: all-to-all WRITEs across " + key(topology.gpu_count) + " GPUs");
  for (std::size_t a = 0; a < topology.gpu_count; ++a) {
    for (std::size_t b = a + 1; b < topology.gpu_count; ++b) {
      connect_roce_pair(client, static_cast<GpuId>(a), static_cast<GpuId>(b), 1);
    }
  }
  std::vector<std::pair<GpuId, json>> writes, verifies;
  const std::uint64_t salt = 5077;
  for (std::size_t gpu = 0; gpu < topology.gpu_count; ++gpu) {
    writes.emplace_back(static_cast<GpuId>(gpu),
                        json{{"op", "roce_all_to_all_write"},
                             {"bytes_per_peer", plan.all_to_all_bytes_per_peer},
                             {"salt", salt}});
    verifies.emplace_back(static_cast<GpuId>(gpu),
                          json{{"op", "roce_all_to_all_verify"},
                               {"bytes_per_peer", plan.all_to_all_bytes_per_peer},
                               {"salt", salt}});
  }
  std::uint64_t first_start = UINT64_MAX, last_end = 0, all_bytes = 0;
  for (const json& run : client.run_parallel(writes)) {
    totals.add(
        run.contains("first_error")
            ? "RoCE all-to-all write (first failure: " + run["first_error"].get<std::string>() + ")"
            : "RoCE all-to-all write",
        run);
    first_start = std::min(first_start, run["start_ns"].get<std::uint64_t>());
    last_end = std::max(last_end, run["end_ns"].get<std::uint64_t>());
    all_bytes += run["payload_bytes"].get<std::uint64_t>();
  }
  report["all_to_all_gbps"] =
      last_end > first_start
          ? static_cast<double>(all_bytes) * 8.0 / static_cast<double>(last_end - first_start)
          : 0.0;
  progress("RoCE: all-to-all: reading everything back");
  for (const json& run : client.run_parallel(verifies)) totals.add("RoCE all-to-all verify", run);
  for (std::size_t a = 0; a < topology.gpu_count; ++a) {
    for (std::size_t b = 0; b < topology.gpu_count; ++b) {
      if (a != b) {
        client.run(static_cast<GpuId>(a), {{"op", "roce_destroy"}, {"peer", b}});
      }
    }
  }

  json counters = json::array();
  for (std::size_t gpu = 0; gpu < topology.gpu_count; ++gpu) {
    counters.push_back(client.run(static_cast<GpuId>(gpu), {{"op", "roce_stats"}})["counters"]);
  }
  report["roce_counters"] = counters;
  json wire = json::object();
  const auto mtu = report["path_mtu_bytes"].get<std::size_t>();
  for (std::uint32_t size : plan.bandwidth_sizes) {
    wire[key(size)] = {{"write", wire_cost_json(roce_write_cost(size, mtu))},
                       {"read", wire_cost_json(roce_read_cost(size, mtu))}};
  }
  report["wire"] = wire;
  return report;
}

}  // namespace ethx
