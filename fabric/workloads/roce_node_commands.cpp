#include "fabric/workloads/roce_node_commands.hpp"

#include <stdexcept>

#include "fabric/workloads/run_summary.hpp"
#include "packet-engine/roce/roce_addressing.hpp"

namespace ethx {
namespace {

protocol::RoceCounterSummary counter_summary(const roce::RoceCounters& c) {
  protocol::RoceCounterSummary summary;
  for (std::uint64_t n : c.decode_errors) summary.decode_errors += n;
  summary.frames_rx = c.frames_rx;
  summary.frames_tx = c.frames_tx;
  summary.bytes_tx = c.bytes_tx;
  summary.not_for_us = c.not_for_us;
  summary.unknown_qp = c.unknown_qp;
  summary.wrong_peer = c.wrong_peer;
  summary.doorbells = c.doorbells;
  summary.wqes_posted = c.wqes_posted;
  summary.request_packets = c.request_packets;
  summary.retransmitted_packets = c.retransmitted_packets;
  summary.timeouts = c.timeouts;
  summary.seq_naks_received = c.seq_naks_received;
  summary.error_naks_received = c.error_naks_received;
  summary.requests_executed = c.requests_executed;
  summary.acks_sent = c.acks_sent;
  summary.access_naks_sent = c.access_naks_sent;
  summary.access_bad_rkey = c.access_bad_rkey;
  summary.out_of_sequence = c.out_of_sequence;
  summary.error_completions = c.error_completions;
  summary.cq_overflows = c.cq_overflows;
  return summary;
}

}  // namespace

RoceCommands::RoceCommands(NodeRuntime& node, const BenchLayout& layout)
    : roce_(node.roce()), workloads_(node, layout) {}

protocol::RoceInfo RoceCommands::info() const {
  const roce::RoceNode& node = roce_.node();
  protocol::RoceInfo info;
  info.mac = node.mac().to_string();
  info.ip = node.ip();
  info.ip_text = format_ipv4(node.ip());
  info.rkey = roce_.hbm_rkey();
  info.hbm_bytes = roce_.hbm_bytes();
  info.path_mtu_bytes = roce_.path_mtu_bytes();
  info.qps = node.qp_count();
  info.qp_state_bytes_total = node.total_qp_state_bytes();
  info.qp_state_bytes_per_qp = info.qps > 0 ? info.qp_state_bytes_total / info.qps : 0;
  info.counters = counter_summary(node.counters());
  return info;
}

protocol::RoceInfo RoceCommands::operator()(const protocol::RoceInfoCommand&) {
  return info();
}

protocol::RoceInfo RoceCommands::operator()(const protocol::RoceStatsCommand&) {
  return info();
}

protocol::RoceCreateResult RoceCommands::operator()(const protocol::RoceCreateCommand& command) {
  protocol::RoceCreateResult result;
  for (const auto& [qpn, psn] : roce_.create_qps(command.peer, command.count)) {
    result.created.push_back({qpn, psn});
  }
  result.info = info();
  return result;
}

protocol::RoceConnectResult RoceCommands::operator()(const protocol::RoceConnectCommand& command) {
  const auto mac = MacAddr::parse(command.remote_mac);
  if (!mac) throw protocol::ProtocolError("remote_mac: not a MAC address");
  if (command.remote_qpns.size() != command.remote_psns.size()) {
    throw protocol::ProtocolError("remote_psns: one per remote_qpns entry");
  }
  std::vector<roce::QpRemote> remote;
  for (std::size_t n = 0; n < command.remote_qpns.size(); ++n) {
    remote.push_back(
        roce::QpRemote{*mac, command.remote_ip, command.remote_qpns[n], command.remote_psns[n]});
  }
  roce_.connect_qps(command.peer, command.local_qpns, remote, command.remote_rkey);
  return {command.local_qpns.size()};
}

protocol::RoceDestroyResult RoceCommands::operator()(const protocol::RoceDestroyCommand& command) {
  return {roce_.destroy_qps(command.peer)};
}

protocol::LatencyResult RoceCommands::operator()(const protocol::RoceLatencyCommand& command) {
  LatencyRun run =
      workloads_.latency(command.peer, command.rdma_op, command.bytes, command.count, command.seed);
  return with_first_error(latency_summary(run));
}

protocol::ThroughputResult RoceCommands::operator()(const protocol::RoceBandwidthCommand& command) {
  return with_first_error(throughput_summary(
      workloads_.bandwidth(command.peer, command.rdma_op, command.bytes, command.total_bytes,
                           command.outstanding, command.salt)));
}

protocol::RoceMessageRateResult RoceCommands::operator()(
    const protocol::RoceMessageRateCommand& command) {
  RoceRateParams params;
  params.bytes = command.bytes;
  params.count = command.count;
  params.batch = command.batch;
  params.outstanding = command.outstanding;
  params.salt = command.salt;
  protocol::RoceMessageRateResult result;
  result.run = with_first_error(throughput_summary(workloads_.message_rate(command.peer, params)));
  result.qps = roce_.connections(command.peer).size();
  return result;
}

protocol::BadRkeyProbeResult RoceCommands::operator()(
    const protocol::RoceBadRkeyProbeCommand& command) {
  const BadRkeyProbe probe = workloads_.bad_rkey_probe(command.peer, command.bytes);
  return {roce::to_string(probe.read_status), roce::to_string(probe.write_status),
          probe.target_mismatches, probe.errors};
}

protocol::ThroughputResult RoceCommands::operator()(
    const protocol::RoceAllToAllWriteCommand& command) {
  return with_first_error(
      throughput_summary(workloads_.all_to_all_write(command.bytes_per_peer, command.salt)));
}

protocol::ThroughputResult RoceCommands::operator()(
    const protocol::RoceAllToAllVerifyCommand& command) {
  return with_first_error(
      throughput_summary(workloads_.all_to_all_verify(command.bytes_per_peer, command.salt)));
}

}  // namespace ethx
