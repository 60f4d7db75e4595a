// Flow control per traffic class at a GPU's end of its hop in the emulator ([link]
// flow_control = "cbfc" | "pfc"; docs/link-layer.md "In the emulator"): a NodePort above the
// link-level retry port. As the hop's sender it keeps one queue per class (requests,
// responses) and lets the switch port's credits or pauses, and deficit round robin between the
// classes, pick the next frame, as the simulator's NIC and the switch's ports do. As the
// receiver it returns credit as frames arrive: the engine takes every frame into memory at
// once, so a GPU never pauses the switch (as in the simulator).
//
// It needs link-level retry below it (require_emulated): credit updates and pauses travel as
// LLR data, so a lost one is replayed; and link training is how both ends learn that the other
// restarted, so both start again from full credit together (the switch's port resets its flow
// state when a GPU trains; this port resets when the switch trains).
//
// Like every NodePort it is used by one thread at a time (the one that owns the port).
#pragma once

#include <array>
#include <deque>
#include <memory>
#include <optional>

#include "fabric/node/llr_node_port.hpp"
#include "packet-engine/flow_control.hpp"
#include "packet-engine/mac_addr.hpp"

namespace ethx {

class FlowNodePort final : public LayeredNodePort {
 public:
  // `thresholds` as pfc_thresholds() gives them for the hop (required for PFC); `rate_gbps` is
  // the link's, for PFC's pause quanta; `mac` the GPU's (the source of its credit updates).
  FlowNodePort(std::unique_ptr<LlrNodePort> inner, const FlowControlConfig& config,
               std::optional<PfcThresholds> thresholds, double rate_gbps, const MacAddr& mac);

  std::size_t max_frame_bytes() const override { return llr_.max_frame_bytes(); }
  // Queues the frame under its class and sends what the credits allow; always takes it, so a
  // response is never stuck behind requests in the caller's backlog (one queue for both
  // classes). The caller's writers see the queues in frames_queued() and wait on them. Throws
  // FrameTooLarge for a frame longer than max_frame_bytes().
  bool try_send(std::span<const std::byte> frame) override;
  bool can_send() const override { return true; }
  // Returns the frames taken from the link layer (credit updates and pauses included).
  std::size_t receive(std::size_t max, FrameSink& sink) override;
  void wait(std::int64_t timeout_ns, const std::function<bool()>& also_ready) override;
  bool has_input() override;
  // The link layer's timers, and the end of a pause that holds a waiting frame (PFC).
  std::optional<std::uint64_t> next_timer_ns() const override;

  const LlrNodePort& link_retry_port() const { return llr_; }
  // The sending and receiving ends' counters, summed (as `ethx sim` reports them).
  FlowControlCounters counters() const;
  std::size_t credit_bytes(TrafficClass c) const { return sender_.credit_bytes(c); }
  std::size_t frames_queued() const override { return queues_[0].size() + queues_[1].size(); }
  // Times the hop restarted (link training) and flow control started over with it.
  std::uint64_t flow_resets() const { return flow_resets_; }

 private:
  class Accounting;
  // Sends the control frame owed first, then waiting frames as the credits or pauses allow.
  void push_output(TimeNs now);
  bool push_control(TimeNs now);
  // try_send's way when no frame waits: the frame goes down now or not at all.
  bool send_alone(TrafficClass c, std::span<const std::byte> frame, TimeNs now);
  // Both ends start over from full credit when the link layer below trained the hop again.
  void reset_if_link_restarted();
  std::uint64_t link_restarts() const;
  // Whether a waiting frame may go now (credit, no pause) and the link layer would take it.
  bool sendable(TimeNs now) const;
  bool control_owed() const { return holding_control_ || receiver_.control_due(); }
  // How soon a caller looks again while the link layer below has no room for what is owed.
  static constexpr TimeNs kBlockedPollNs = 50'000;

  LlrNodePort& llr_;  // *inner_: its counters say when the hop trained again
  FlowControlConfig config_;
  std::optional<PfcThresholds> thresholds_;
  double rate_gbps_;
  MacAddr mac_;
  FlowSender sender_;
  FlowReceiver receiver_;
  std::array<std::deque<wire::Frame>, kTrafficClasses> queues_;
  // A credit update taken from the receiver that the link layer had no room for: it goes
  // first next time (dropping it could leave the switch waiting for credit for good).
  wire::Frame held_control_;
  bool holding_control_ = false;
  std::uint64_t seen_link_restarts_ = 0;
  std::uint64_t flow_resets_ = 0;
  FlowControlCounters earlier_counters_;  // of the flow states before the last reset
};

// The link layer a node's port runs, for its counters: the LLR port and the flow-control port
// above it, each nullptr when the config leaves it off (open_node_port stacks them).
struct NodeLinkLayer {
  const LlrNodePort* link_retry = nullptr;
  const FlowNodePort* flow_control = nullptr;
};
NodeLinkLayer link_layer_of(const NodePort& port);

}  // namespace ethx
