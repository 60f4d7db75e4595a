#include "switch/runtime/switch_stats.hpp"

#include "fabric/platform/clock.hpp"
#include "switch/runtime/fault_change.hpp"

namespace ethx {
namespace {

// A port's flow control ([link] flow_control): both ends' counters, the credit it has towards
// its far end and what its far end has in this switch's buffer, per class.
nlohmann::json flow_control_json(const SwitchCore& core, PortId port,
                                 const FlowControlCounters& c) {
  const auto per_class = [&](auto read) {
    return nlohmann::json{{"requests", read(TrafficClass::kRequests)},
                          {"responses", read(TrafficClass::kResponses)}};
  };
  return {{"frames_held", c.frames_held},
          {"credit_updates_sent", c.credit_updates_sent},
          {"credit_updates_received", c.credit_updates_received},
          {"pause_frames_sent", c.pause_frames_sent},
          {"pause_frames_received", c.pause_frames_received},
          {"buffer_overruns", c.buffer_overruns},
          {"malformed", c.malformed},
          {"credit_bytes", per_class([&](TrafficClass k) { return core.credit_bytes(port, k); })},
          {"ingress_buffer_bytes",
           per_class([&](TrafficClass k) { return core.ingress_buffer_bytes(port, k); })}};
}

}  // namespace

nlohmann::json switch_stats_json(const SwitchCore& core) {
  nlohmann::json ports = nlohmann::json::array();
  nlohmann::json totals = {{"rx_frames", 0},
                           {"tx_frames", 0},
                           {"drops_malformed", 0},
                           {"drops_queue_full", 0},
                           {"drops_unknown_destination", 0},
                           {"drops_hairpin", 0},
                           {"drops_spoofed", 0},
                           {"drops_link_down", 0},
                           {"faults_dropped", 0},
                           {"faults_corrupted", 0},
                           {"faults_reordered", 0},
                           {"faults_delayed", 0},
                           {"faults_tx_dropped", 0},
                           {"faults_tx_corrupted", 0}};
  for (PortId port = 0; port < core.port_count(); ++port) {
    const PortCounters& c = core.counters(port);
    nlohmann::json malformed_by_reason = nlohmann::json::object();
    for (std::size_t reason = 0; reason < c.malformed_by_reason.size(); ++reason) {
      if (c.malformed_by_reason[reason] != 0) {
        malformed_by_reason[wire::to_string(static_cast<wire::DecodeError>(reason))] =
            c.malformed_by_reason[reason];
      }
    }
    nlohmann::json entry = {{"port", port},
                            {"rx_frames", c.rx_frames},
                            {"rx_bytes", c.rx_bytes},
                            {"tx_frames", c.tx_frames},
                            {"tx_bytes", c.tx_bytes},
                            {"drops_malformed", c.drops_malformed},
                            {"drops_queue_full", c.drops_queue_full},
                            {"drops_unknown_destination", c.drops_unknown_destination},
                            {"drops_hairpin", c.drops_hairpin},
                            {"drops_spoofed", c.drops_spoofed},
                            {"faults_dropped", c.faults_dropped},
                            {"faults_corrupted", c.faults_corrupted},
                            {"faults_reordered", c.faults_reordered},
                            {"faults_delay_spikes", c.faults_delay_spikes},
                            {"faults_delayed", c.faults_delayed},
                            {"faults_tx_dropped", c.faults_tx_dropped},
                            {"faults_tx_corrupted", c.faults_tx_corrupted},
                            {"drops_link_down", c.drops_link_down},
                            {"queued_bytes", core.queued_bytes(port)},
                            {"queued_frames", core.queued_frames(port)},
                            {"queue_bytes_high_water", c.queue_bytes_high_water},
                            {"malformed_by_reason", malformed_by_reason},
                            {"faults", port_faults_json(core.faults(port), core.port_up(port))},
                            // What the port does to the frames it sends ([[fault]] direction).
                            {"tx_faults", port_faults_json(core.tx_faults(port), true)}};
    for (auto& [key, value] : totals.items())
      value = value.get<std::uint64_t>() + entry[key].get<std::uint64_t>();
    if (const LinkRetryCounters* llr = core.link_retry_counters(port)) {
      nlohmann::json& out = entry["link_retry"] = nlohmann::json::object();
      llr->for_each([&out](const char* name, std::uint64_t value) { out[name] = value; });
    }
    if (const std::optional<FlowControlCounters> flow = core.flow_control_counters(port)) {
      entry["flow_control"] = flow_control_json(core, port, *flow);
    }
    ports.push_back(entry);
  }
  // When the counters were read (monotonic): `ethx top` divides by the time between two
  // readings, not by when it happened to look at the file.
  return {{"published_ns", monotonic_ns()},
          {"ports", ports},
          {"totals", totals},
          {"drops_bad_port", core.drops_bad_port()}};
}

}  // namespace ethx
