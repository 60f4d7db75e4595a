// The real-time runtime of one emulated GPU node: drives its Endpoint (sans-I/O) with frames
// from a NodePort and the monotonic clock, answers bare echo frames for baselines, and hosts
// the RoCEv2 engine of the comparison on the same port (IPv4 frames go to it).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "address-map/address_map.hpp"
#include "fabric/config/topology_config.hpp"
#include "fabric/node/peer_health_publisher.hpp"
#include "fabric/node/roce_host.hpp"
#include "fabric/platform/clock.hpp"
#include "fabric/transport/node_port.hpp"
#include "packet-engine/endpoint.hpp"

namespace ethx {

struct NodeRuntimeCounters {
  std::uint64_t frames_sent = 0;
  std::uint64_t send_retries = 0;  // transmit path full; the frame waited in the backlog
  std::uint64_t echo_requests_answered = 0;
  std::uint64_t echo_replies = 0;
  std::uint64_t foreign_frames = 0;  // neither ethx, echo nor IPv4 (RoCE): counted and dropped
};

class NodeRuntime final : private FrameSink {
 public:
  // Throws ConfigError if the fabric MTU does not fit the port's frame buffers.
  NodeRuntime(const TopologyConfig& topology, GpuId self, std::span<std::byte> local_memory,
              NodePort& port);

  Endpoint& endpoint() { return endpoint_; }
  RoceHost& roce() { return roce_; }
  const AddressMap& address_map() const { return address_map_; }
  NodePort& port() { return port_; }
  GpuId self() const { return self_; }
  const NodeRuntimeCounters& counters() const { return counters_; }
  // Frames not yet on the wire: the port's backlog, frames waiting for the engine's credit
  // ([reliability]) and frames the port holds for its link layer's ([link] flow_control).
  std::size_t backlog_frames() const {
    return backlog_.size() + endpoint_.links().frames_waiting() + port_.frames_queued();
  }
  // Whether this runtime holds frames the port would take now: a round would send them. (Not
  // backlog_frames() > 0: the engine's and the port's waiting frames wait for credit, which
  // comes with a frame.)
  bool backlog_sendable() const { return !backlog_.empty() && port_.can_send(); }
  // Blocking helpers (wait_for_*) throw Interrupted once *flag is true, so a node stops
  // promptly in the middle of a benchmark when its process is told to.
  void set_stop_flag(const std::atomic<bool>* flag) { stop_flag_ = flag; }
  // Every pump() from now on publishes the requester's view of its peers there (a control
  // mailbox's board, read by `ethx status`).
  void publish_peer_health_to(PeerHealthBoard& board) { peer_health_.emplace(board); }
  // Throws Interrupted if the stop flag is set (for loops outside the wait_for_* helpers).
  void check_stop() const;
  // Where ops issued on the requester put their frames; transmit() sends them.
  Effects& effects() { return effects_; }
  // When the engine's timers (write combining, retransmission, request timeouts) next need a
  // pump(), as of the last one.
  // The engine's next timer, or the port's (link-level retry) if that comes first.
  std::optional<TimeNs> next_wake_ns() const {
    const std::optional<TimeNs> port_timer = port_.next_timer_ns();
    if (!port_timer) return effects_.wake_at;
    return effects_.wake_at ? std::min(*effects_.wake_at, *port_timer) : *port_timer;
  }

  // One round: receive what arrived, serve it, run timers, transmit. If there was nothing to
  // do, waits (adaptively) up to `idle_wait_ns` or until `also_ready()`.
  void pump(std::int64_t idle_wait_ns, const std::function<bool()>& also_ready = {});
  // Pumps until a completion is available and returns it (every op ends: a lost response
  // becomes a timeout completion).
  Completion wait_for_completion();
  // Pumps until at least one completion is available (leaves it for take_completion()).
  void wait_for_any_completion();
  // Pumps until the transmit backlog is at most `frames` long (a writer's back-pressure).
  // False if it stopped shrinking for a whole request timeout (a peer that never grants
  // credit): the caller counts an error instead of waiting forever.
  bool wait_for_backlog_below(std::size_t frames);
  // Sends transactions issued since the last call (the engine batches until then). Runs the
  // engine's timers first; before a request may time out, takes every frame that already
  // arrived (its response may be among them).
  void transmit();

  // Bare echo for baselines: the same path as a remote load with no engine logic.
  void send_echo(GpuId peer, std::uint64_t sequence);
  // Pumps until the echo reply with `sequence` arrives or `timeout_ns` passes.
  bool wait_echo(std::uint64_t sequence, std::int64_t timeout_ns);

 private:
  void on_frame(std::span<const std::byte> frame) override;
  void handle_echo(std::span<const std::byte> frame, const MacAddr& dst, const MacAddr& src);
  void drain_backlog();
  void receive_arrived();

  const TopologyConfig& topology_;
  GpuId self_;
  AddressMap address_map_;
  Endpoint endpoint_;
  NodePort& port_;
  Effects effects_;
  std::deque<wire::Frame> backlog_;  // frames the port could not take yet, in order
  std::optional<std::uint64_t> last_echo_reply_;
  NodeRuntimeCounters counters_;
  const std::atomic<bool>* stop_flag_ = nullptr;
  std::optional<PeerHealthPublisher> peer_health_;
  RoceHost roce_;
};

}  // namespace ethx
