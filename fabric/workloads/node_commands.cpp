#include "fabric/workloads/node_commands.hpp"

#include <type_traits>
#include <variant>

#include "fabric/node/flow_node_port.hpp"
#include "fabric/node/node_protocol.hpp"
#include "fabric/workloads/roce_node_commands.hpp"
#include "fabric/workloads/run_summary.hpp"
#include "fabric/workloads/soak_workload.hpp"

namespace ethx {
namespace {

using nlohmann::json;

protocol::LinkStats link_stats(const LinkCounters& links) {
  protocol::LinkStats stats;
  stats.frames_sequenced = links.frames_sequenced;
  stats.frames_held = links.frames_held;
  stats.retransmitted_on_nak = links.retransmitted_on_nak;
  stats.retransmitted_on_timer = links.retransmitted_on_timer;
  stats.retransmit_timeouts = links.retransmit_timeouts;
  stats.naks_received = links.naks_received;
  stats.acks_sent = links.acks_sent;
  stats.naks_sent = links.naks_sent;
  stats.frames_in_order = links.frames_in_order;
  stats.duplicates_dropped = links.duplicates_dropped;
  stats.gaps_dropped = links.gaps_dropped;
  stats.bad_acks = links.bad_acks;
  stats.unknown_peer = links.unknown_peer;
  stats.peer_restarts = links.peer_restarts;
  return stats;
}

protocol::HopRetryStats hop_retry_stats(const LlrNodePort* llr) {
  protocol::HopRetryStats stats;
  if (llr == nullptr) return stats;
  const LinkRetryCounters& c = llr->counters();
  stats.frames_sent = c.frames_sent;
  stats.frames_replayed = c.frames_replayed;
  stats.replays_nak = c.replays_nak;
  stats.replays_timeout = c.replays_timeout;
  stats.acks_sent = c.acks_sent;
  stats.naks_sent = c.naks_sent;
  stats.drops_bad_fcs = c.drops_bad_fcs;
  stats.drops_out_of_sequence = c.drops_out_of_sequence;
  stats.drops_duplicate = c.drops_duplicate;
  stats.trainings = c.trainings_started + c.trainings_answered;
  stats.frames_lost_on_reset = c.frames_lost_on_reset;
  stats.gave_up = c.gave_up;
  return stats;
}

protocol::HopFlowStats hop_flow_stats(const FlowNodePort* flow) {
  protocol::HopFlowStats stats;
  if (flow == nullptr) return stats;
  const FlowControlCounters c = flow->counters();
  stats.frames_held = c.frames_held;
  stats.credit_updates_sent = c.credit_updates_sent;
  stats.credit_updates_received = c.credit_updates_received;
  stats.pause_frames_sent = c.pause_frames_sent;
  stats.pause_frames_received = c.pause_frames_received;
  stats.malformed = c.malformed;
  stats.resets = flow->flow_resets();
  return stats;
}

protocol::NodeStats node_stats(NodeRuntime& node) {
  const EndpointCounters& endpoint = node.endpoint().counters();
  const RequesterCounters& requester = node.endpoint().requester().counters();
  const CompleterCounters& completer = node.endpoint().completer().counters();
  protocol::NodeStats stats;
  stats.frames_rx = endpoint.frames_rx;
  stats.frames_tx = node.endpoint().frames_tx();
  stats.txns_tx = node.endpoint().txns_tx();
  stats.malformed = endpoint.malformed;
  stats.misdelivered = endpoint.misdelivered;
  stats.timeouts = requester.timeouts;
  stats.stale_responses = requester.stale_responses;
  stats.writes_combined = requester.writes_combined;
  stats.completer_errors = completer.errors;
  stats.posted_write_errors = completer.posted_write_errors;
  stats.send_retries = node.counters().send_retries;
  stats.foreign_frames = node.counters().foreign_frames;
  stats.peers_marked_down = requester.peers_marked_down;
  stats.peers_marked_up = requester.peers_marked_up;
  stats.ops_fast_failed = requester.ops_fast_failed;
  stats.posted_writes_dropped = requester.posted_writes_dropped;
  stats.down_peers = node.endpoint().requester().down_peers();
  stats.links = link_stats(node.endpoint().links().counters());
  const NodeLinkLayer link_layer = link_layer_of(node.port());
  stats.hop_retry = hop_retry_stats(link_layer.link_retry);
  stats.hop_flow = hop_flow_stats(link_layer.flow_control);
  return stats;
}

// The load/store commands, one operator() each; the RoCE ones are RoceCommands'.
class LoadStoreCommands {
 public:
  LoadStoreCommands(NodeRuntime& node, BenchWorkloads& workloads)
      : node_(node), workloads_(workloads) {}

  protocol::LatencyResult operator()(const protocol::EchoCommand& command) {
    LatencyRun run = workloads_.echo_latency(command.peer, command.count);
    return latency_summary(run);
  }
  protocol::EchoAndLoadResult operator()(const protocol::EchoAndLoadLatencyCommand& command) {
    auto [echo, load] =
        workloads_.echo_and_load_latency(command.peer, command.count, command.bytes, command.seed);
    return {latency_summary(echo), latency_summary(load)};
  }
  protocol::LatencyResult operator()(const protocol::LoadLatencyCommand& command) {
    LatencyRun run =
        workloads_.load_latency(command.peer, command.count, command.bytes, command.seed);
    return latency_summary(run);
  }
  protocol::ThroughputResult operator()(const protocol::StoreBandwidthCommand& command) {
    return throughput_summary(workloads_.store_bandwidth(command.peer, command.size_bytes,
                                                         command.total_bytes, command.salt));
  }
  protocol::ThroughputResult operator()(const protocol::ReadBandwidthCommand& command) {
    return throughput_summary(workloads_.read_bandwidth(command.peer, command.size_bytes,
                                                        command.total_bytes, command.outstanding));
  }
  protocol::ThroughputResult operator()(const protocol::AtomicRateCommand& command) {
    return throughput_summary(
        workloads_.atomic_rate(command.peer, command.count, command.outstanding));
  }
  protocol::ThroughputResult operator()(const protocol::AllToAllStoreCommand& command) {
    return throughput_summary(workloads_.all_to_all_store(command.bytes_per_peer, command.salt));
  }
  protocol::ThroughputResult operator()(const protocol::AllToAllVerifyCommand& command) {
    return throughput_summary(workloads_.all_to_all_verify(command.bytes_per_peer, command.salt));
  }
  protocol::SoakResult operator()(const protocol::SoakCommand& command) {
    SoakWorkload soak(node_, workloads_);
    const SoakRun run = soak.run(command.ops, command.seed, command.outstanding);
    return protocol::SoakResult{run.ops,          run.stores,     run.loads,        run.atomics,
                                run.verified_ops, run.mismatches, run.timeouts,     run.errors,
                                run.start_ns,     run.end_ns,     node_stats(node_)};
  }
  protocol::NodeStats operator()(const protocol::StatsCommand&) { return node_stats(node_); }

 private:
  NodeRuntime& node_;
  BenchWorkloads& workloads_;
};

// Runs `command` by whichever handler takes it; its answer is the command's Result type.
template <class Command, class Handler>
json answer(const Command& command, Handler&& handler) {
  static_assert(std::is_same_v<decltype(handler(command)), typename Command::Result>,
                "a handler must answer a command with the command's Result");
  return json(handler(command));
}

json dispatch(const protocol::NodeCommand& command, NodeRuntime& node, BenchWorkloads& workloads) {
  return std::visit(
      [&](const auto& request) -> json {
        if constexpr (std::is_invocable_v<LoadStoreCommands&, decltype(request)>) {
          return answer(request, LoadStoreCommands(node, workloads));
        } else {
          return answer(request, RoceCommands(node, workloads.layout()));
        }
      },
      command);
}

}  // namespace

std::string run_node_command(const std::string& command_json, NodeRuntime& node,
                             BenchWorkloads& workloads) {
  try {
    return dispatch(protocol::parse_command(command_json), node, workloads).dump();
  } catch (const std::exception& error) {
    return protocol::error_json(error.what()).dump();
  }
}

}  // namespace ethx
