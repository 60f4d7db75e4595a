// The results of the node protocol's commands (node_protocol.hpp): what a node answers, one
// struct per kind, each with its JSON fields listed once (protocol_fields.hpp). Coordinators
// read them with FabricClient::call; the node fills them from its workloads' runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "address-map/fabric_types.hpp"
#include "fabric/node/protocol_fields.hpp"

namespace ethx::protocol {

// One latency run: nearest-rank percentiles of its samples and what it verified.
struct LatencyResult {
  std::uint64_t p50_ns = 0;
  std::uint64_t p99_ns = 0;
  std::uint64_t samples = 0;
  std::uint64_t verified_ops = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t errors = 0;
  std::string first_error;  // RoCE: status of the first failed completion, "" if none

  bool operator==(const LatencyResult&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("p50_ns", self.p50_ns);
    f.required("p99_ns", self.p99_ns);
    f.required("samples", self.samples);
    f.required("verified_ops", self.verified_ops);
    f.required("mismatches", self.mismatches);
    f.required("errors", self.errors);
    f.optional("first_error", self.first_error);
  }
};

// One throughput run: what moved between start_ns and end_ns (node clock) and what it verified.
struct ThroughputResult {
  std::uint64_t payload_bytes = 0;
  std::uint64_t ops = 0;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  double gbps = 0;
  double ops_per_second = 0;
  std::uint64_t verified_ops = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t errors = 0;
  std::string first_error;  // RoCE: status of the first failed completion, "" if none

  bool operator==(const ThroughputResult&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("payload_bytes", self.payload_bytes);
    f.required("ops", self.ops);
    f.required("start_ns", self.start_ns);
    f.required("end_ns", self.end_ns);
    f.required("gbps", self.gbps);
    f.required("ops_per_second", self.ops_per_second);
    f.required("verified_ops", self.verified_ops);
    f.required("mismatches", self.mismatches);
    f.required("errors", self.errors);
    f.optional("first_error", self.first_error);
  }
};

// Bare echoes and loads alternating sample by sample.
struct EchoAndLoadResult {
  LatencyResult echo;
  LatencyResult load;

  bool operator==(const EchoAndLoadResult&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("echo", self.echo);
    f.required("load", self.load);
  }
};

// The go-back-N links' counters of one node (packet-engine/reliable_links.hpp).
struct LinkStats {
  std::uint64_t frames_sequenced = 0;
  std::uint64_t frames_held = 0;
  std::uint64_t retransmitted_on_nak = 0;
  std::uint64_t retransmitted_on_timer = 0;
  std::uint64_t retransmit_timeouts = 0;
  std::uint64_t naks_received = 0;
  std::uint64_t acks_sent = 0;
  std::uint64_t naks_sent = 0;
  std::uint64_t frames_in_order = 0;
  std::uint64_t duplicates_dropped = 0;
  std::uint64_t gaps_dropped = 0;
  std::uint64_t bad_acks = 0;
  std::uint64_t unknown_peer = 0;
  std::uint64_t peer_restarts = 0;  // a peer's incarnation changed: the pair was reset

  bool operator==(const LinkStats&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("frames_sequenced", self.frames_sequenced);
    f.required("frames_held", self.frames_held);
    f.required("retransmitted_on_nak", self.retransmitted_on_nak);
    f.required("retransmitted_on_timer", self.retransmitted_on_timer);
    f.required("retransmit_timeouts", self.retransmit_timeouts);
    f.required("naks_received", self.naks_received);
    f.required("acks_sent", self.acks_sent);
    f.required("naks_sent", self.naks_sent);
    f.required("frames_in_order", self.frames_in_order);
    f.required("duplicates_dropped", self.duplicates_dropped);
    f.required("gaps_dropped", self.gaps_dropped);
    f.required("bad_acks", self.bad_acks);
    f.required("unknown_peer", self.unknown_peer);
    f.optional("peer_restarts", self.peer_restarts);
  }
};

// Link-level retry at the node's end of its hop (fabric/node/llr_node_port.hpp), when [link]
// retry = "llr": what the GPU replayed towards its switch port and what it dropped on the way in.
struct HopRetryStats {
  std::uint64_t frames_sent = 0;
  std::uint64_t frames_replayed = 0;
  std::uint64_t replays_nak = 0;
  std::uint64_t replays_timeout = 0;
  std::uint64_t acks_sent = 0;
  std::uint64_t naks_sent = 0;
  std::uint64_t drops_bad_fcs = 0;
  std::uint64_t drops_out_of_sequence = 0;
  std::uint64_t drops_duplicate = 0;
  std::uint64_t trainings = 0;             // started here or answered: each one restarted the hop
  std::uint64_t frames_lost_on_reset = 0;  // unacknowledged when a training reset the hop
  std::uint64_t gave_up = 0;               // the replay timer gave up on the switch port

  bool operator==(const HopRetryStats&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("frames_sent", self.frames_sent);
    f.required("frames_replayed", self.frames_replayed);
    f.required("replays_nak", self.replays_nak);
    f.required("replays_timeout", self.replays_timeout);
    f.required("acks_sent", self.acks_sent);
    f.required("naks_sent", self.naks_sent);
    f.required("drops_bad_fcs", self.drops_bad_fcs);
    f.required("drops_out_of_sequence", self.drops_out_of_sequence);
    f.required("drops_duplicate", self.drops_duplicate);
    f.required("trainings", self.trainings);
    f.required("frames_lost_on_reset", self.frames_lost_on_reset);
    f.required("gave_up", self.gave_up);
  }
};

// Flow control per traffic class at the GPU's end of its hop ([link] flow_control; both the
// sending and the receiving end, summed), as FlowControlCounters has them.
struct HopFlowStats {
  std::uint64_t frames_held = 0;  // times frames waited for credit or the end of a pause
  std::uint64_t credit_updates_sent = 0;
  std::uint64_t credit_updates_received = 0;
  std::uint64_t pause_frames_sent = 0;
  std::uint64_t pause_frames_received = 0;
  std::uint64_t malformed = 0;
  std::uint64_t resets = 0;  // the hop trained again and flow control started over

  bool operator==(const HopFlowStats&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("frames_held", self.frames_held);
    f.required("credit_updates_sent", self.credit_updates_sent);
    f.required("credit_updates_received", self.credit_updates_received);
    f.required("pause_frames_sent", self.pause_frames_sent);
    f.required("pause_frames_received", self.pause_frames_received);
    f.required("malformed", self.malformed);
    f.required("resets", self.resets);
  }
};

// A node's load/store engine and runtime counters (`ethx bench --json` prints them as "nodes").
struct NodeStats {
  std::uint64_t frames_rx = 0;
  std::uint64_t frames_tx = 0;
  std::uint64_t txns_tx = 0;
  std::uint64_t malformed = 0;
  std::uint64_t misdelivered = 0;
  std::uint64_t timeouts = 0;
  std::uint64_t stale_responses = 0;
  std::uint64_t writes_combined = 0;
  std::uint64_t completer_errors = 0;
  std::uint64_t posted_write_errors = 0;
  std::uint64_t send_retries = 0;
  std::uint64_t foreign_frames = 0;
  // Peer liveness (docs/reliability.md "When a component dies").
  std::uint64_t peers_marked_down = 0;
  std::uint64_t peers_marked_up = 0;
  std::uint64_t ops_fast_failed = 0;  // completed at once with UNREACHABLE: the peer is down
  std::uint64_t posted_writes_dropped = 0;
  std::vector<GpuId> down_peers;  // the GPUs this node has marked down now
  LinkStats links;
  HopRetryStats hop_retry;  // all zero without link-level retry
  HopFlowStats hop_flow;    // all zero without flow control

  bool operator==(const NodeStats&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("frames_rx", self.frames_rx);
    f.required("frames_tx", self.frames_tx);
    f.required("txns_tx", self.txns_tx);
    f.required("malformed", self.malformed);
    f.required("misdelivered", self.misdelivered);
    f.required("timeouts", self.timeouts);
    f.required("stale_responses", self.stale_responses);
    f.required("writes_combined", self.writes_combined);
    f.required("completer_errors", self.completer_errors);
    f.required("posted_write_errors", self.posted_write_errors);
    f.required("send_retries", self.send_retries);
    f.required("foreign_frames", self.foreign_frames);
    f.optional("peers_marked_down", self.peers_marked_down);
    f.optional("peers_marked_up", self.peers_marked_up);
    f.optional("ops_fast_failed", self.ops_fast_failed);
    f.optional("posted_writes_dropped", self.posted_writes_dropped);
    f.optional("down_peers", self.down_peers);
    f.required("links", self.links);
    f.optional("hop_retry", self.hop_retry);
    f.optional("hop_flow", self.hop_flow);
  }
};

// One node's soak mix (fabric/workloads/soak_workload.hpp has what each count means).
struct SoakResult {
  std::uint64_t ops = 0;
  std::uint64_t stores = 0;
  std::uint64_t loads = 0;
  std::uint64_t atomics = 0;
  std::uint64_t verified_ops = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t timeouts = 0;
  std::uint64_t errors = 0;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  NodeStats stats;

  bool operator==(const SoakResult&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("ops", self.ops);
    f.required("stores", self.stores);
    f.required("loads", self.loads);
    f.required("atomics", self.atomics);
    f.required("verified_ops", self.verified_ops);
    f.required("mismatches", self.mismatches);
    f.required("timeouts", self.timeouts);
    f.required("errors", self.errors);
    f.required("start_ns", self.start_ns);
    f.required("end_ns", self.end_ns);
    f.required("stats", self.stats);
  }
};

// The RoCE engine's counters a node reports (`ethx bench --engine roce --json` prints them as
// "roce_counters"); decode_errors is the sum over every decode error kind.
struct RoceCounterSummary {
  std::uint64_t frames_rx = 0;
  std::uint64_t frames_tx = 0;
  std::uint64_t bytes_tx = 0;
  std::uint64_t decode_errors = 0;
  std::uint64_t not_for_us = 0;
  std::uint64_t unknown_qp = 0;
  std::uint64_t wrong_peer = 0;
  std::uint64_t doorbells = 0;
  std::uint64_t wqes_posted = 0;
  std::uint64_t request_packets = 0;
  std::uint64_t retransmitted_packets = 0;
  std::uint64_t timeouts = 0;
  std::uint64_t seq_naks_received = 0;
  std::uint64_t error_naks_received = 0;
  std::uint64_t requests_executed = 0;
  std::uint64_t acks_sent = 0;
  std::uint64_t access_naks_sent = 0;
  std::uint64_t access_bad_rkey = 0;
  std::uint64_t out_of_sequence = 0;
  std::uint64_t error_completions = 0;
  std::uint64_t cq_overflows = 0;

  bool operator==(const RoceCounterSummary&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("frames_rx", self.frames_rx);
    f.required("frames_tx", self.frames_tx);
    f.required("bytes_tx", self.bytes_tx);
    f.required("decode_errors", self.decode_errors);
    f.required("not_for_us", self.not_for_us);
    f.required("unknown_qp", self.unknown_qp);
    f.required("wrong_peer", self.wrong_peer);
    f.required("doorbells", self.doorbells);
    f.required("wqes_posted", self.wqes_posted);
    f.required("request_packets", self.request_packets);
    f.required("retransmitted_packets", self.retransmitted_packets);
    f.required("timeouts", self.timeouts);
    f.required("seq_naks_received", self.seq_naks_received);
    f.required("error_naks_received", self.error_naks_received);
    f.required("requests_executed", self.requests_executed);
    f.required("acks_sent", self.acks_sent);
    f.required("access_naks_sent", self.access_naks_sent);
    f.required("access_bad_rkey", self.access_bad_rkey);
    f.required("out_of_sequence", self.out_of_sequence);
    f.required("error_completions", self.error_completions);
    f.required("cq_overflows", self.cq_overflows);
  }
};

// A node's RoCE engine: its addresses and key (what a peer needs to connect), QPs, counters.
struct RoceInfo {
  std::string mac;
  std::uint32_t ip = 0;  // IPv4, host order
  std::string ip_text;
  std::uint32_t rkey = 0;  // of the node's whole HBM
  std::uint64_t hbm_bytes = 0;
  std::uint32_t path_mtu_bytes = 0;
  std::uint64_t qps = 0;
  std::uint64_t qp_state_bytes_total = 0;
  std::uint64_t qp_state_bytes_per_qp = 0;
  RoceCounterSummary counters;

  bool operator==(const RoceInfo&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("mac", self.mac);
    f.required("ip", self.ip);
    f.required("ip_text", self.ip_text);
    f.required("rkey", self.rkey);
    f.required("hbm_bytes", self.hbm_bytes);
    f.required("path_mtu_bytes", self.path_mtu_bytes);
    f.required("qps", self.qps);
    f.required("qp_state_bytes_total", self.qp_state_bytes_total);
    f.required("qp_state_bytes_per_qp", self.qp_state_bytes_per_qp);
    f.required("counters", self.counters);
  }
};

// A queue pair a node created: what the peer's side connects to.
struct CreatedQp {
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;  // the first packet sequence number it will send

  bool operator==(const CreatedQp&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("qpn", self.qpn);
    f.required("psn", self.psn);
  }
};

// The node's RoceInfo after creating QPs, and the QPs (flattened into one object).
struct RoceCreateResult {
  RoceInfo info;
  std::vector<CreatedQp> created;

  bool operator==(const RoceCreateResult&) const = default;
  static void fields(auto& self, auto& f) {
    RoceInfo::fields(self.info, f);
    f.required("created", self.created);
  }
};

struct RoceConnectResult {
  std::uint64_t connected = 0;  // QPs connected

  bool operator==(const RoceConnectResult&) const = default;
  static void fields(auto& self, auto& f) { f.required("connected", self.connected); }
};

struct RoceDestroyResult {
  std::uint64_t destroyed = 0;  // QPs destroyed

  bool operator==(const RoceDestroyResult&) const = default;
  static void fields(auto& self, auto& f) { f.required("destroyed", self.destroyed); }
};

// A message-rate run and over how many QPs it was spread (flattened into one object).
struct RoceMessageRateResult {
  ThroughputResult run;
  std::uint64_t qps = 0;

  bool operator==(const RoceMessageRateResult&) const = default;
  static void fields(auto& self, auto& f) {
    ThroughputResult::fields(self.run, f);
    f.required("qps", self.qps);
  }
};

// What a READ and a WRITE with a wrong rkey did (statuses as roce::to_string names them).
struct BadRkeyProbeResult {
  std::string read_status;
  std::string write_status;
  std::uint64_t target_mismatches = 0;  // 8 B words of the target area that changed
  std::uint64_t errors = 0;             // the verification READ failed

  bool operator==(const BadRkeyProbeResult&) const = default;
  static void fields(auto& self, auto& f) {
    f.required("read_status", self.read_status);
    f.required("write_status", self.write_status);
    f.required("target_mismatches", self.target_mismatches);
    f.required("errors", self.errors);
  }
};

}  // namespace ethx::protocol
