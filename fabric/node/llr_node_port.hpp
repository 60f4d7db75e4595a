// Link-level retry at a GPU's end of its hop in the emulator (docs/link-layer.md "In the
// emulator"): a NodePort that wraps the transport's port and runs packet-engine's LinkRetry on
// what passes through, so the node runtime and the QEMU device see frames without trailers and
// never learn that a frame was replayed. Its timers run on the wall clock
// (wall_clock_link_retry); it trains its link when it starts (LinkRetry::start_training), so a
// restarted node and the switch port agree on where numbering starts.
//
// Like every NodePort it is used by one thread at a time (the one that owns the port).
#pragma once

#include <memory>

#include "fabric/node/layered_node_port.hpp"
#include "packet-engine/link_retry.hpp"
#include "packet-engine/mac_addr.hpp"

namespace ethx {

class LlrNodePort final : public LayeredNodePort {
 public:
  // `config` with wall-clock timers; `mac` is the GPU's (the source of its ACKs and NAKs);
  // `training_nonce` should differ between starts of the same GPU (a random draw).
  LlrNodePort(std::unique_ptr<NodePort> inner, const LinkRetryConfig& config, const MacAddr& mac,
              std::uint32_t training_nonce);

  // The trailer takes 12 bytes of the transport's frame.
  std::size_t max_frame_bytes() const override {
    return inner_->max_frame_bytes() - kLlrTrailerBytes;
  }
  // Throws FrameTooLarge for a frame longer than max_frame_bytes().
  bool try_send(std::span<const std::byte> frame) override;
  bool can_send() const override;
  // Returns the frames taken from the transport (ACKs and dropped frames included), so a caller
  // that drains until 0 does not stop before a frame behind them.
  std::size_t receive(std::size_t max, FrameSink& sink) override;
  void wait(std::int64_t timeout_ns, const std::function<bool()>& also_ready) override;
  bool has_input() override;
  std::optional<std::uint64_t> next_timer_ns() const override;

  const LinkRetryCounters& counters() const { return llr_.counters(); }
  bool training() const { return llr_.training(); }

 private:
  class Unwrapping;
  // Runs the timers that are due, then hands the transport what the link layer owes: a frame it
  // could not take earlier, ACKs and NAKs, replays. False while some of it is still waiting for
  // room.
  bool push_link_output(TimeNs now);
  // Hands `frame` to the transport; keeps it to go first next time if the transport is full.
  bool push_or_hold(wire::Frame& frame);
  // A frame held for the transport, or control frames and replays not yet handed to it.
  bool output_owed() const { return holding_ || llr_.has_output(); }
  // How soon a caller looks again while output is owed and the transport is full.
  static constexpr TimeNs kOwedOutputPollNs = 50'000;

  LinkRetry llr_;
  MacAddr mac_;
  wire::Frame held_;  // taken from the link layer, not yet taken by the transport
  bool holding_ = false;
  wire::Frame scratch_;
};

}  // namespace ethx
