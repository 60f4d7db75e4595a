// SimFabric's report: what the partitions' GPUs counted, the switches' and links' counters,
// and the requesters' liveness, gathered when the run is over.
#include <algorithm>
#include <optional>

#include "fabric/sim/sim_fabric.hpp"

namespace ethx::sim {

void SimFabric::add_gpu_tallies() {
  SimReport& r = report_;
  const auto earliest = [](std::optional<std::uint64_t>& into, std::optional<TimePs> at) {
    if (at && (!into || *at < *into)) into = at;
  };
  for (const SimPartition& part : partitions_) {
    const GpuTally& t = part.tally;
    r.frames_delivered += t.frames_delivered;
    r.ops_ok += t.ops_ok;
    r.ops_failed += t.ops_failed;
    r.timeouts += t.timeouts;
    r.unreachable += t.unreachable;
    r.payload_bytes += t.payload_bytes;
    r.makespan_ps = std::max(r.makespan_ps, t.makespan_ps);
    earliest(r.liveness.first_down_ps, t.first_down_ps);
    earliest(r.liveness.first_up_ps, t.first_up_ps);
  }
  // In place: the run is over, and a copy of millions of latencies cost its pages.
  std::vector<TimePs>& latencies = partitions_[0].tally.latencies_ps;
  const std::vector<TimePs>& beside = partitions_[1].tally.latencies_ps;
  latencies.insert(latencies.end(), beside.begin(), beside.end());
  r.latency_p50_ps = select_percentile(latencies, 50);
  r.latency_p99_ps = select_percentile(latencies, 99);
  r.latency_max_ps = latencies.empty() ? 0 : *std::max_element(latencies.begin(), latencies.end());
}

void SimFabric::fill_report(const Workload& workload) {
  SimReport& r = report_;
  r.gpus = gpus_.size();
  r.link_rate_gbps = config_.link_rate_gbps;
  r.propagation_ns = config_.link_propagation_ns;
  r.forwarding_latency_ns = config_.switch_forwarding_latency_ns;
  r.egress_queue_bytes = config_.switch_egress_queue_bytes;
  r.issue_ns = config_.sim_issue_ns;
  r.completer_ns = config_.sim_completer_ns;
  r.nic_latency_ns = config_.sim_nic_latency_ns;
  r.events = partitions_[0].events + (partitioned_ ? partitions_[1].events : 0);
  r.threads = threads_used_;
  r.cores_round_trip_ns = cores_round_trip_ns_;
  r.complete = workload.done();
  add_gpu_tallies();
  for (const Link& link : links_) {
    r.link_frames += link.frames_sent;
    r.link_wire_bytes += link.wire_bytes_sent;
  }
  add_switch_reports();
  if (engine_ == SimEngine::kRoce) {
    add_nic_report();
  } else {
    add_liveness_report();
    add_link_retry_report();
  }
}

void SimFabric::add_switch_reports() {
  SimReport& r = report_;
  for (std::size_t index = 0; index < switches_.size(); ++index) {
    const SwitchCore& core = *switches_[index];
    SwitchReport s;
    s.name = topology_.switch_names[index];
    s.ports = core.port_count();
    s.drops = core.drops_bad_port();
    for (PortId port = 0; port < core.port_count(); ++port) {
      const PortCounters& c = core.counters(port);
      s.rx_frames += c.rx_frames;
      s.tx_frames += c.tx_frames;
      s.max_queue_bytes = std::max(s.max_queue_bytes, c.queue_bytes_high_water);
      s.drops_queue_full += c.drops_queue_full;
      s.drops += c.drops_malformed + c.drops_queue_full + c.drops_unknown_destination +
                 c.drops_hairpin + c.drops_link_down;
      r.drops_link_down += c.drops_link_down;
    }
    r.drops += s.drops;
    r.drops_queue_full += s.drops_queue_full;
    r.switches.push_back(std::move(s));
  }
}

void SimFabric::add_liveness_report() {
  LivenessReport& l = report_.liveness;
  for (Gpu& state : gpus_) {
    const RequesterCounters& c = state.endpoint->requester().counters();
    l.peers_marked_down += c.peers_marked_down;
    l.peers_marked_up += c.peers_marked_up;
    l.ops_fast_failed += c.ops_fast_failed;
    l.posted_writes_dropped += c.posted_writes_dropped;
    l.probes_sent += c.probes_sent;
    l.probes_answered += c.probes_answered;
  }
}

}  // namespace ethx::sim
