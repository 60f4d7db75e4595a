#include "fabric/bench/roce_suite.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "fabric/bench/compare_wire.hpp"

namespace ethx {
namespace {

using nlohmann::json;
using protocol::RoceOp;

constexpr std::pair<RoceOp, const char*> kRdmaOps[] = {{RoceOp::kWrite, "write"},
                                                       {RoceOp::kRead, "read"}};

std::string key(std::uint64_t value) {
  return std::to_string(value);
}

// A run's name in the totals, with the first failed completion's status if there was one.
std::string run_name(const std::string& name, const std::string& first_error) {
  return first_error.empty() ? name : name + " (first failure: " + first_error + ")";
}

// Connects `self`'s QPs to the ones `peer` created, in chunks: a command must fit the 4 KiB
// mailbox (control_region.hpp).
void connect_side(FabricClient& client, GpuId self, GpuId peer,
                  const protocol::RoceCreateResult& mine,
                  const protocol::RoceCreateResult& theirs) {
  constexpr std::size_t kQpsPerCommand = 64;
  for (std::size_t first = 0; first < mine.created.size(); first += kQpsPerCommand) {
    protocol::RoceConnectCommand command;
    command.peer = peer;
    command.remote_mac = theirs.info.mac;
    command.remote_ip = theirs.info.ip;
    command.remote_rkey = theirs.info.rkey;
    for (std::size_t n = first; n < std::min(mine.created.size(), first + kQpsPerCommand); ++n) {
      command.local_qpns.push_back(mine.created[n].qpn);
      command.remote_qpns.push_back(theirs.created[n].qpn);
      command.remote_psns.push_back(theirs.created[n].psn);
    }
    client.call(self, command);
  }
}

// The suite between GPU 0 (requester) and GPU 1 (target), phase by phase, each adding its
// keys to the report.
class RoceSuite {
 public:
  RoceSuite(FabricClient& client, const SweepPlan& plan, Totals& totals,
            const std::function<void(const std::string&)>& progress)
      : client_(client), plan_(plan), totals_(totals), progress_(progress) {}

  void connect(json& report);
  void measure_latency(json& report);
  void measure_bandwidth(json& report);
  void measure_message_rate(json& report);
  void measure_many_qps(json& report);
  void probe_bad_rkey(json& report);
  void measure_all_to_all(std::size_t gpu_count, json& report);
  void collect_counters(std::size_t gpu_count, json& report);

 private:
  static constexpr GpuId kRequester = 0;
  static constexpr GpuId kTarget = 1;

  void disconnect() {
    client_.call(kRequester, protocol::RoceDestroyCommand{.peer = kTarget});
    client_.call(kTarget, protocol::RoceDestroyCommand{.peer = kRequester});
  }
  // Adds a run to the totals. A failed WR leaves an RC QP in the error state, flushing
  // everything after it, so the pair is reconnected: one failure is counted once, not in
  // every later run.
  template <class Run>
  void record(const std::string& name, const Run& run) {
    totals_.add(run_name(name, run.first_error), run);
    if (run.errors > 0) {
      disconnect();
      connect_roce_pair(client_, kRequester, kTarget, connected_qps_);
    }
  }

  FabricClient& client_;
  const SweepPlan& plan_;
  Totals& totals_;
  const std::function<void(const std::string&)>& progress_;
  std::size_t connected_qps_ = 0;
};

void RoceSuite::connect(json& report) {
  progress_("RoCE: connecting one RC queue pair GPU 0 <-> GPU 1 (QPN/PSN/rkey out of band)");
  const RocePair pair = connect_roce_pair(client_, kRequester, kTarget, 1);
  connected_qps_ = 1;
  report["path_mtu_bytes"] = pair.a.info.path_mtu_bytes;
  report["addresses"] = {{"gpu0", {{"mac", pair.a.info.mac}, {"ip", pair.a.info.ip_text}}},
                         {"gpu1", {{"mac", pair.b.info.mac}, {"ip", pair.b.info.ip_text}}}};
}

void RoceSuite::measure_latency(json& report) {
  progress_("RoCE: WRITE and READ latency, " + std::to_string(plan_.latency_sizes.size()) +
            " sizes x " + std::to_string(plan_.latency_samples) + " samples");
  for (const auto& [op, name] : kRdmaOps) {
    json by_size = json::object();
    for (std::uint32_t size : plan_.latency_sizes) {
      const protocol::LatencyResult run =
          client_.call(kRequester, protocol::RoceLatencyCommand{.peer = kTarget,
                                                                .rdma_op = op,
                                                                .bytes = size,
                                                                .count = plan_.latency_samples,
                                                                .seed = 100 + size});
      record(std::string("RoCE ") + name + " latency " + key(size) + " B", run);
      by_size[key(size)] = {{"p50", run.p50_ns}, {"p99", run.p99_ns}};
    }
    report[std::string(name) + "_latency_ns"] = by_size;
  }
}

void RoceSuite::measure_bandwidth(json& report) {
  progress_("RoCE: WRITE and READ bandwidth, " + key(plan_.bandwidth_sizes.front()) + " B .. " +
            key(plan_.bandwidth_sizes.back()) + " B, up to " + key(plan_.outstanding) +
            " outstanding");
  for (const auto& [op, name] : kRdmaOps) {
    json by_size = json::object();
    for (std::uint32_t size : plan_.bandwidth_sizes) {
      const protocol::ThroughputResult run = client_.call(
          kRequester,
          protocol::RoceBandwidthCommand{.peer = kTarget,
                                         .rdma_op = op,
                                         .bytes = size,
                                         .total_bytes = bandwidth_total_bytes(plan_, size),
                                         .outstanding = bandwidth_outstanding(plan_, size),
                                         .salt = 2000 + size});
      record(std::string("RoCE ") + name + " bandwidth " + key(size) + " B", run);
      by_size[key(size)] = run.gbps;
    }
    report[std::string(name) + "_bandwidth_gbps"] = by_size;
  }
}

void RoceSuite::measure_message_rate(json& report) {
  progress_("RoCE: 8 B WRITE message rate, doorbell per WR and batched");
  json rates = json::object();
  for (std::uint32_t batch : plan_.batches) {
    const protocol::RoceMessageRateResult result = client_.call(
        kRequester,
        protocol::RoceMessageRateCommand{.peer = kTarget,
                                         .count = plan_.rate_count,
                                         .bytes = 8,
                                         .batch = batch,
                                         .outstanding = std::max<std::uint32_t>(64, batch),
                                         .salt = 3000 + batch});
    record("RoCE message rate, batch " + key(batch), result.run);
    rates["batch_" + key(batch)] = result.run.ops_per_second / 1e6;
  }
  report["message_rate_mops"] = rates;
}

void RoceSuite::measure_many_qps(json& report) {
  progress_("RoCE: many queue pairs (per-connection state and message rate)");
  json many = json::array();
  const std::uint32_t many_batch = plan_.batches.back();
  for (std::size_t qps : plan_.qp_counts) {
    disconnect();
    connected_qps_ = qps;
    connect_roce_pair(client_, kRequester, kTarget, qps);
    const protocol::RoceInfo info = client_.call(kRequester, protocol::RoceInfoCommand{});
    const protocol::RoceMessageRateResult result = client_.call(
        kRequester, protocol::RoceMessageRateCommand{
                        .peer = kTarget,
                        .count = plan_.rate_count,
                        .bytes = 8,
                        .batch = many_batch,
                        .outstanding = static_cast<std::uint32_t>(
                            std::max<std::uint64_t>(64, std::uint64_t{many_batch} * 4)),
                        .salt = 4000 + qps});
    record("RoCE many QPs, " + key(qps) + " QPs", result.run);
    many.push_back({{"qps", qps},
                    {"state_bytes_total", info.qp_state_bytes_total},
                    {"state_bytes_per_qp", info.qp_state_bytes_per_qp},
                    {"batch", many_batch},
                    {"message_rate_mops", result.run.ops_per_second / 1e6}});
  }
  report["many_qps"] = many;
  disconnect();
}

void RoceSuite::probe_bad_rkey(json& report) {
  progress_("RoCE: a READ and a WRITE with a wrong rkey (NAK, counted, target unchanged)");
  connect_roce_pair(client_, kRequester, kTarget, 3);
  const protocol::RoceCounterSummary before =
      client_.call(kTarget, protocol::RoceStatsCommand{}).counters;
  protocol::RoceBadRkeyProbeCommand probe_command;
  probe_command.peer = kTarget;
  const protocol::BadRkeyProbeResult probe = client_.call(kRequester, probe_command);
  const protocol::RoceCounterSummary after =
      client_.call(kTarget, protocol::RoceStatsCommand{}).counters;
  const std::uint64_t naks_sent = after.access_naks_sent - before.access_naks_sent;
  const std::uint64_t bad_rkeys = after.access_bad_rkey - before.access_bad_rkey;
  // Both WRs must fail with a remote access error, the target must have NAKed and counted
  // both bad keys, and its memory must read back unchanged; anything else is an error.
  const bool rkey_ok = probe.read_status == "remote-access-error" &&
                       probe.write_status == "remote-access-error" && naks_sent == 2 &&
                       bad_rkeys == 2 && probe.target_mismatches == 0 && probe.errors == 0;
  report["bad_rkey"] = {{"read_status", probe.read_status},
                        {"write_status", probe.write_status},
                        {"target_access_naks_sent", naks_sent},
                        {"target_access_bad_rkey", bad_rkeys},
                        {"target_memory_unchanged", probe.target_mismatches == 0},
                        {"ok", rkey_ok}};
  totals_.add_counts("RoCE wrong-rkey probe", rkey_ok ? 2 : 0, 0, rkey_ok ? 0 : 1);
  disconnect();
}

void RoceSuite::measure_all_to_all(std::size_t gpu_count, json& report) {
  progress_("RoCE: all-to-all WRITEs across " + key(gpu_count) + " GPUs");
  for (std::size_t a = 0; a < gpu_count; ++a) {
    for (std::size_t b = a + 1; b < gpu_count; ++b) {
      connect_roce_pair(client_, static_cast<GpuId>(a), static_cast<GpuId>(b), 1);
    }
  }
  std::vector<std::pair<GpuId, protocol::RoceAllToAllWriteCommand>> writes;
  std::vector<std::pair<GpuId, protocol::RoceAllToAllVerifyCommand>> verifies;
  const std::uint64_t salt = 5077;
  for (std::size_t gpu = 0; gpu < gpu_count; ++gpu) {
    writes.emplace_back(static_cast<GpuId>(gpu),
                        protocol::RoceAllToAllWriteCommand{plan_.all_to_all_bytes_per_peer, salt});
    verifies.emplace_back(static_cast<GpuId>(gpu), protocol::RoceAllToAllVerifyCommand{
                                                       plan_.all_to_all_bytes_per_peer, salt});
  }
  const std::vector<protocol::ThroughputResult> runs = client_.call_parallel(writes);
  for (const protocol::ThroughputResult& run : runs) {
    totals_.add(run_name("RoCE all-to-all write", run.first_error), run);
  }
  report["all_to_all_gbps"] = aggregate_gbps(runs);
  progress_("RoCE: all-to-all: reading everything back");
  for (const protocol::ThroughputResult& run : client_.call_parallel(verifies)) {
    totals_.add("RoCE all-to-all verify", run);
  }
  for (std::size_t a = 0; a < gpu_count; ++a) {
    for (std::size_t b = 0; b < gpu_count; ++b) {
      if (a != b) {
        client_.call(static_cast<GpuId>(a),
                     protocol::RoceDestroyCommand{.peer = static_cast<GpuId>(b)});
      }
    }
  }
}

void RoceSuite::collect_counters(std::size_t gpu_count, json& report) {
  json counters = json::array();
  for (std::size_t gpu = 0; gpu < gpu_count; ++gpu) {
    counters.push_back(
        json(client_.call(static_cast<GpuId>(gpu), protocol::RoceStatsCommand{}).counters));
  }
  report["roce_counters"] = counters;
}

}  // namespace

RocePair connect_roce_pair(FabricClient& client, GpuId a, GpuId b, std::size_t count) {
  // Step 1: each side creates its QPs and reports QPN, PSN, rkey, MAC and IPv4 ...
  RocePair pair{client.call(a, protocol::RoceCreateCommand{.peer = b, .count = count}),
                client.call(b, protocol::RoceCreateCommand{.peer = a, .count = count})};
  // ... step 2: each side connects to what the other reported.
  connect_side(client, a, b, pair.a, pair.b);
  connect_side(client, b, a, pair.b, pair.a);
  return pair;
}

json run_roce_suite(FabricClient& client, const TopologyConfig& topology, const SweepPlan& plan,
                    Totals& totals, const std::function<void(const std::string&)>& progress) {
  RoceSuite suite(client, plan, totals, progress);
  json report;
  suite.connect(report);
  suite.measure_latency(report);
  suite.measure_bandwidth(report);
  suite.measure_message_rate(report);
  suite.measure_many_qps(report);
  suite.probe_bad_rkey(report);
  suite.measure_all_to_all(topology.gpu_count, report);
  suite.collect_counters(topology.gpu_count, report);
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
