#include "fabric/workloads/node_commands.hpp"

#include <nlohmann/json.hpp>

#include "fabric/workloads/roce_node_commands.hpp"
#include "fabric/workloads/run_summary.hpp"
#include "fabric/workloads/soak_workload.hpp"

namespace ethx {
namespace {

using nlohmann::json;

json link_stats(const LinkCounters& links) {
  return json{{"frames_sequenced", links.frames_sequenced},
              {"frames_held", links.frames_held},
              {"retransmitted_on_nak", links.retransmitted_on_nak},
              {"retransmitted_on_timer", links.retransmitted_on_timer},
              {"retransmit_timeouts", links.retransmit_timeouts},
              {"naks_received", links.naks_received},
              {"acks_sent", links.acks_sent},
              {"naks_sent", links.naks_sent},
              {"frames_in_order", links.frames_in_order},
              {"duplicates_dropped", links.duplicates_dropped},
              {"gaps_dropped", links.gaps_dropped},
              {"bad_acks", links.bad_acks},
              {"unknown_peer", links.unknown_peer}};
}

json node_stats(NodeRuntime& node) {
  const EndpointCounters& endpoint = node.endpoint().counters();
  const RequesterCounters& requester = node.endpoint().requester().counters();
  const CompleterCounters& completer = node.endpoint().completer().counters();
  return json{{"frames_rx", endpoint.frames_rx},
              {"frames_tx", node.endpoint().frames_tx()},
              {"txns_tx", node.endpoint().txns_tx()},
              {"malformed", endpoint.malformed},
              {"misdelivered", endpoint.misdelivered},
              {"timeouts", requester.timeouts},
              {"stale_responses", requester.stale_responses},
              {"writes_combined", requester.writes_combined},
              {"completer_errors", completer.errors},
              {"posted_write_errors", completer.posted_write_errors},
              {"send_retries", node.counters().send_retries},
              {"foreign_frames", node.counters().foreign_frames},
              {"links", link_stats(node.endpoint().links().counters())}};
}

json dispatch(const json& command, NodeRuntime& node, BenchWorkloads& workloads) {
  const std::string op = command.at("op").get<std::string>();
  auto peer = [&] { return command.at("peer").get<GpuId>(); };
  if (auto roce = run_roce_command(op, command, node, workloads.layout())) return *roce;
  if (op == "echo") {
    LatencyRun run = workloads.echo_latency(peer(), command.at("count").get<std::uint32_t>());
    return latency_summary(run);
  }
  if (op == "echo_and_load_latency") {
    auto [echo, load] = workloads.echo_and_load_latency(
        peer(), command.at("count").get<std::uint32_t>(), command.value("bytes", 8u),
        command.value("seed", std::uint64_t{1}));
    return json{{"echo", latency_summary(echo)}, {"load", latency_summary(load)}};
  }
  if (op == "load_latency") {
    LatencyRun run =
        workloads.load_latency(peer(), command.at("count").get<std::uint32_t>(),
                               command.value("bytes", 8u), command.value("seed", std::uint64_t{1}));
    return latency_summary(run);
  }
  if (op == "store_bandwidth") {
    return throughput_summary(workloads.store_bandwidth(
        peer(), command.at("size").get<std::uint32_t>(),
        command.at("total_bytes").get<std::uint64_t>(), command.at("salt").get<std::uint64_t>()));
  }
  if (op == "read_bandwidth") {
    return throughput_summary(workloads.read_bandwidth(
        peer(), command.at("size").get<std::uint32_t>(),
        command.at("total_bytes").get<std::uint64_t>(), command.value("outstanding", 32u)));
  }
  if (op == "atomic_rate") {
    return throughput_summary(workloads.atomic_rate(
        peer(), command.at("count").get<std::uint32_t>(), command.value("outstanding", 16u)));
  }
  if (op == "all_to_all_store") {
    return throughput_summary(
        workloads.all_to_all_store(command.at("bytes_per_peer").get<std::uint64_t>(),
                                   command.at("salt").get<std::uint64_t>()));
  }
  if (op == "all_to_all_verify") {
    return throughput_summary(
        workloads.all_to_all_verify(command.at("bytes_per_peer").get<std::uint64_t>(),
                                    command.at("salt").get<std::uint64_t>()));
  }
  if (op == "soak") {
    SoakWorkload soak(node, workloads);
    const SoakRun run =
        soak.run(command.at("ops").get<std::uint64_t>(), command.value("seed", std::uint64_t{1}),
                 command.value("outstanding", 32u));
    return json{{"ops", run.ops},
                {"stores", run.stores},
                {"loads", run.loads},
                {"atomics", run.atomics},
                {"verified_ops", run.verified_ops},
                {"mismatches", run.mismatches},
                {"timeouts", run.timeouts},
                {"errors", run.errors},
                {"start_ns", run.start_ns},
                {"end_ns", run.end_ns},
                {"stats", node_stats(node)}};
  }
  if (op == "stats") return node_stats(node);
  return json{{"error", "unknown command \"" + op + "\""}};
}

}  // namespace

std::string run_node_command(const std::string& command_json, NodeRuntime& node,
                             BenchWorkloads& workloads) {
  try {
    return dispatch(json::parse(command_json), node, workloads).dump();
  } catch (const std::exception& error) {
    return json{{"error", error.what()}}.dump();
  }
}

}  // namespace ethx
