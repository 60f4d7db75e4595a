#include "fabric/workloads/roce_node_commands.hpp"

#include <stdexcept>

#include "fabric/node/roce_addressing.hpp"
#include "fabric/workloads/roce_bench_workloads.hpp"
#include "fabric/workloads/run_summary.hpp"

namespace ethx {
namespace {

using nlohmann::json;

json counters_json(const roce::RoceCounters& c) {
  std::uint64_t decode_errors = 0;
  for (std::uint64_t n : c.decode_errors) decode_errors += n;
  return json{{"frames_rx", c.frames_rx},
              {"frames_tx", c.frames_tx},
              {"bytes_tx", c.bytes_tx},
              {"decode_errors", decode_errors},
              {"not_for_us", c.not_for_us},
              {"unknown_qp", c.unknown_qp},
              {"wrong_peer", c.wrong_peer},
              {"doorbells", c.doorbells},
              {"wqes_posted", c.wqes_posted},
              {"request_packets", c.request_packets},
              {"retransmitted_packets", c.retransmitted_packets},
              {"timeouts", c.timeouts},
              {"seq_naks_received", c.seq_naks_received},
              {"error_naks_received", c.error_naks_received},
              {"requests_executed", c.requests_executed},
              {"acks_sent", c.acks_sent},
              {"access_naks_sent", c.access_naks_sent},
              {"access_bad_rkey", c.access_bad_rkey},
              {"out_of_sequence", c.out_of_sequence},
              {"error_completions", c.error_completions},
              {"cq_overflows", c.cq_overflows}};
}

json info_json(RoceHost& roce) {
  const roce::RoceNode& node = roce.node();
  const std::size_t qps = node.qp_count();
  return json{{"mac", node.mac().to_string()},
              {"ip", node.ip()},
              {"ip_text", format_ipv4(node.ip())},
              {"rkey", roce.hbm_rkey()},
              {"hbm_bytes", roce.hbm_bytes()},
              {"path_mtu_bytes", roce.path_mtu_bytes()},
              {"qps", qps},
              {"qp_state_bytes_total", node.total_qp_state_bytes()},
              {"qp_state_bytes_per_qp", qps > 0 ? node.total_qp_state_bytes() / qps : 0},
              {"counters", counters_json(node.counters())}};
}

template <class T>
T field(const json& command, const char* name) {
  if (!command.contains(name)) throw std::invalid_argument(std::string(name) + ": missing");
  try {
    return command.at(name).get<T>();
  } catch (const json::exception&) {
    throw std::invalid_argument(std::string(name) + ": wrong type");
  }
}

json connect(const json& command, RoceHost& roce) {
  const auto peer = field<GpuId>(command, "peer");
  const auto local = field<std::vector<roce::QpNum>>(command, "local_qpns");
  const auto remote_qpns = field<std::vector<roce::QpNum>>(command, "remote_qpns");
  const auto remote_psns = field<std::vector<std::uint32_t>>(command, "remote_psns");
  const auto mac = MacAddr::parse(field<std::string>(command, "remote_mac"));
  if (!mac) throw std::invalid_argument("remote_mac: not a MAC address");
  if (remote_qpns.size() != remote_psns.size()) {
    throw std::invalid_argument("remote_psns: one per remote_qpns entry");
  }
  std::vector<roce::QpRemote> remote;
  for (std::size_t n = 0; n < remote_qpns.size(); ++n) {
    remote.push_back(roce::QpRemote{*mac, field<std::uint32_t>(command, "remote_ip"),
                                    remote_qpns[n], remote_psns[n]});
  }
  roce.connect_qps(peer, local, remote, field<std::uint32_t>(command, "remote_rkey"));
  return json{{"connected", local.size()}};
}

}  // namespace

std::optional<json> run_roce_command(const std::string& op, const json& command, NodeRuntime& node,
                                     const BenchLayout& layout) {
  if (op.rfind("roce_", 0) != 0) return std::nullopt;
  RoceHost& roce = node.roce();
  RoceBenchWorkloads workloads(node, layout);
  if (op == "roce_info" || op == "roce_stats") return info_json(roce);
  if (op == "roce_create") {
    json qps = json::array();
    for (const auto& [qpn, psn] :
         roce.create_qps(field<GpuId>(command, "peer"), field<std::size_t>(command, "count"))) {
      qps.push_back({{"qpn", qpn}, {"psn", psn}});
    }
    json info = info_json(roce);
    info["created"] = qps;
    return info;
  }
  if (op == "roce_connect") return connect(command, roce);
  if (op == "roce_destroy") {
    return json{{"destroyed", roce.destroy_qps(field<GpuId>(command, "peer"))}};
  }
  // Every benchmark result names the first failed completion's status, if any.
  const auto with_error = [&workloads](json result) {
    if (!workloads.first_error().empty()) result["first_error"] = workloads.first_error();
    return result;
  };
  if (op == "roce_latency") {
    LatencyRun run = workloads.latency(
        field<GpuId>(command, "peer"), parse_roce_op(field<std::string>(command, "rdma_op")),
        field<std::uint32_t>(command, "bytes"), field<std::uint32_t>(command, "count"),
        command.value("seed", std::uint64_t{1}));
    return with_error(latency_summary(run));
  }
  if (op == "roce_bandwidth") {
    return with_error(throughput_summary(workloads.bandwidth(
        field<GpuId>(command, "peer"), parse_roce_op(field<std::string>(command, "rdma_op")),
        field<std::uint32_t>(command, "bytes"), field<std::uint64_t>(command, "total_bytes"),
        command.value("outstanding", 32u), command.value("salt", std::uint64_t{1}))));
  }
  if (op == "roce_message_rate") {
    RoceRateParams params;
    params.bytes = command.value("bytes", 8u);
    params.count = field<std::uint64_t>(command, "count");
    params.batch = command.value("batch", 1u);
    params.outstanding = command.value("outstanding", 64u);
    params.salt = command.value("salt", std::uint64_t{1});
    json result = with_error(
        throughput_summary(workloads.message_rate(field<GpuId>(command, "peer"), params)));
    result["qps"] = roce.connections(field<GpuId>(command, "peer")).size();
    return result;
  }
  if (op == "roce_bad_rkey_probe") {
    const BadRkeyProbe probe =
        workloads.bad_rkey_probe(field<GpuId>(command, "peer"), command.value("bytes", 64u));
    return json{{"read_status", roce::to_string(probe.read_status)},
                {"write_status", roce::to_string(probe.write_status)},
                {"target_mismatches", probe.target_mismatches},
                {"errors", probe.errors}};
  }
  if (op == "roce_all_to_all_write") {
    return with_error(throughput_summary(workloads.all_to_all_write(
        field<std::uint64_t>(command, "bytes_per_peer"), field<std::uint64_t>(command, "salt"))));
  }
  if (op == "roce_all_to_all_verify") {
    return with_error(throughput_summary(workloads.all_to_all_verify(
        field<std::uint64_t>(command, "bytes_per_peer"), field<std::uint64_t>(command, "salt"))));
  }
  return json{{"error", "unknown command \"" + op + "\""}};
}

}  // namespace ethx
