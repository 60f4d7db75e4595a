#include "fabric/node/llr_node_port.hpp"

#include <algorithm>

#include <string>

#include "fabric/platform/clock.hpp"
#include "fabric/transport/net/frame_socket.hpp"

namespace ethx {

// Strips the trailer off what the link layer delivers; the link layer consumes ACKs, NAKs and
// training frames and drops what fails its checks.
class LlrNodePort::Unwrapping final : public FrameSink {
 public:
  Unwrapping(LinkRetry& llr, FrameSink& sink, TimeNs now) : llr_(llr), sink_(sink), now_(now) {}
  void on_frame(std::span<const std::byte> frame) override {
    std::size_t payload_bytes = 0;
    if (llr_.receive(frame, now_, payload_bytes) != LinkRetry::Verdict::kDeliver) return;
    sink_.on_frame(frame.first(payload_bytes));
  }

 private:
  LinkRetry& llr_;
  FrameSink& sink_;
  TimeNs now_;
};

LlrNodePort::LlrNodePort(std::unique_ptr<NodePort> inner, const LinkRetryConfig& config,
                         const MacAddr& mac, std::uint32_t training_nonce)
    : LayeredNodePort(std::move(inner)), llr_(config, wire::Crc::kOn), mac_(mac) {
  // The switch port may still number its frames for an earlier start of this GPU. Our TRAIN
  // goes out before we read anything: the ring may hold a TRAIN the switch sent an earlier
  // start of this GPU, and answering that one ends our training (LinkRetry::on_train); the
  // switch must see ours first, or it would not reset before our first frame.
  const TimeNs now = monotonic_now_ns();
  llr_.start_training(training_nonce, now);
  push_link_output(now);
}

bool LlrNodePort::push_or_hold(wire::Frame& frame) {
  if (inner_->try_send(frame)) return true;
  held_.swap(frame);
  holding_ = true;
  return false;
}

bool LlrNodePort::push_link_output(TimeNs now) {
  if (llr_.next_deadline_ns() <= now) llr_.on_time(now);
  bool pushed = false;
  bool room = true;
  if (holding_) {
    room = inner_->try_send(held_);
    holding_ = !room;
    pushed = room;
  }
  while (room && llr_.has_output()) {
    if (!llr_.take_control(scratch_, mac_) && !llr_.take_replay(scratch_, now)) break;
    room = push_or_hold(scratch_);
    pushed = pushed || room;
  }
  if (pushed) inner_->kick();
  return room;
}

bool LlrNodePort::try_send(std::span<const std::byte> frame) {
  if (frame.size() > max_frame_bytes()) {
    // Stamped, it would never fit the transport and would block the hop for good.
    throw FrameTooLarge("a " + std::to_string(frame.size()) + " B frame does not fit the " +
                        inner_->transport() +
                        " transport with the 12 B link-level retry "
                        "trailer (at most " +
                        std::to_string(max_frame_bytes()) + " B)");
  }
  const TimeNs now = monotonic_now_ns();
  // ACKs, NAKs and replays go before new frames, as in the switch's ports.
  if (!push_link_output(now)) return false;
  if (!llr_.can_send(frame.size()) || !inner_->can_send()) return false;
  scratch_.assign(frame.begin(), frame.end());
  llr_.stamp(scratch_, now);
  push_or_hold(scratch_);  // stamped: the link layer owns it now, sent or held
  return true;
}

bool LlrNodePort::can_send() const {
  return !holding_ && !llr_.has_output() && inner_->can_send() && llr_.can_send(max_frame_bytes());
}

std::size_t LlrNodePort::receive(std::size_t max, FrameSink& sink) {
  const TimeNs now = monotonic_now_ns();
  if (holding_) push_link_output(now);  // e.g. our first TRAIN, before anything is read
  Unwrapping unwrapping(llr_, sink, now);
  const std::size_t taken = inner_->receive(max, unwrapping);
  push_link_output(now);  // what the arrivals made due: an ACK, a replay after a NAK
  // Frames taken, not only those handed up: a caller draining the port stops at 0, and a batch
  // of ACKs or duplicates may stand before a response.
  return taken;
}

void LlrNodePort::wait(std::int64_t timeout_ns, const std::function<bool()>& also_ready) {
  timeout_ns = until_deadline(timeout_ns, next_timer_ns(), monotonic_now_ns());
  if (timeout_ns == 0) return;
  // Output the transport had no room for (a replay after a NAK, an ACK) is work as soon as it
  // has: the far end may be waiting for it with nothing to send us meanwhile.
  inner_->wait(timeout_ns, [&] {
    return (also_ready && also_ready()) || (output_owed() && inner_->can_send());
  });
}

bool LlrNodePort::has_input() {
  if (inner_->has_input()) return true;
  return (output_owed() && inner_->can_send()) || llr_.next_deadline_ns() <= monotonic_now_ns();
}

std::optional<std::uint64_t> LlrNodePort::next_timer_ns() const {
  TimeNs deadline = llr_.next_deadline_ns();
  // Owed output has no timer of its own (a transmit ring's room signals nothing): look again
  // soon rather than sleep until a frame happens to arrive.
  if (output_owed()) deadline = std::min(deadline, monotonic_now_ns() + kOwedOutputPollNs);
  if (deadline == LinkRetry::kNever) return std::nullopt;
  return deadline;
}

}  // namespace ethx
