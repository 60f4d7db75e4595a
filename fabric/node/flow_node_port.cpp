#include "fabric/node/flow_node_port.hpp"

#include <algorithm>
#include <string>

#include "fabric/platform/clock.hpp"
#include "fabric/transport/net/frame_socket.hpp"

namespace ethx {

// Takes the switch port's credit updates and pauses; accounts data frames as they arrive and
// leave at once (the engine takes every frame into memory), so credit goes back as they come.
class FlowNodePort::Accounting final : public FrameSink {
 public:
  Accounting(FlowNodePort& port, FrameSink& sink, TimeNs now)
      : port_(port), sink_(sink), now_(now) {}
  void on_frame(std::span<const std::byte> frame) override {
    // A TRAIN earlier in this batch restarted the hop: this frame belongs to the new one.
    port_.reset_if_link_restarted();
    if (is_flow_control_frame(frame)) {
      port_.sender_.on_control(frame, now_);
      return;
    }
    const TrafficClass c = traffic_class_of(frame);
    port_.receiver_.on_arrival(c, frame.size(), now_);
    port_.receiver_.on_departure(c, frame.size());
    sink_.on_frame(frame);
  }

 private:
  FlowNodePort& port_;
  FrameSink& sink_;
  TimeNs now_;
};

FlowNodePort::FlowNodePort(std::unique_ptr<LlrNodePort> inner, const FlowControlConfig& config,
                           std::optional<PfcThresholds> thresholds, double rate_gbps,
                           const MacAddr& mac)
    : LayeredNodePort(std::move(inner)),
      llr_(static_cast<LlrNodePort&>(*inner_)),
      config_(config),
      thresholds_(thresholds),
      rate_gbps_(rate_gbps),
      mac_(mac),
      sender_(config, rate_gbps),
      receiver_(config, thresholds, rate_gbps),
      seen_link_restarts_(link_restarts()) {}

std::uint64_t FlowNodePort::link_restarts() const {
  const LinkRetryCounters& c = llr_.counters();
  return c.trainings_started + c.trainings_answered;
}

void FlowNodePort::reset_if_link_restarted() {
  const std::uint64_t restarts = link_restarts();
  if (restarts == seen_link_restarts_) return;
  seen_link_restarts_ = restarts;
  // The switch port reset its end when it trained: full credit, no pause, nothing owed.
  earlier_counters_ = counters();
  sender_ = FlowSender(config_, rate_gbps_);
  receiver_ = FlowReceiver(config_, thresholds_, rate_gbps_);
  holding_control_ = false;
  ++flow_resets_;
}

FlowControlCounters FlowNodePort::counters() const {
  FlowControlCounters total = earlier_counters_;
  total += sender_.counters();
  total += receiver_.counters();
  return total;
}

bool FlowNodePort::push_control(TimeNs now) {
  if (!holding_control_) {
    if (!receiver_.control_due()) return true;
    receiver_.take_control(held_control_, mac_, now);
    holding_control_ = true;
  }
  holding_control_ = !inner_->try_send(held_control_);
  return !holding_control_;
}

bool FlowNodePort::sendable(TimeNs now) const {
  if (!inner_->can_send()) return false;
  for (std::size_t c = 0; c < kTrafficClasses; ++c) {
    const auto cls = static_cast<TrafficClass>(c);
    if (!queues_[c].empty() && sender_.may_send(cls, queues_[c].front().size(), now)) return true;
  }
  return false;
}

void FlowNodePort::push_output(TimeNs now) {
  reset_if_link_restarted();
  bool pushed = false;
  if (control_owed()) {
    if (!push_control(now)) return;
    pushed = true;
  }
  for (;;) {
    std::array<bool, kTrafficClasses> waiting{};
    std::array<std::size_t, kTrafficClasses> head_bytes{};
    for (std::size_t c = 0; c < kTrafficClasses; ++c) {
      waiting[c] = !queues_[c].empty();
      if (waiting[c]) head_bytes[c] = queues_[c].front().size();
    }
    // Nothing to ask while the link layer has no room (pick() charges nothing: on_sent() does).
    if (!(waiting[0] || waiting[1]) || !inner_->can_send()) break;
    const std::optional<TrafficClass> picked = sender_.pick(waiting, head_bytes, now);
    if (!picked) break;
    const auto c = static_cast<std::size_t>(*picked);
    if (!inner_->try_send(queues_[c].front())) break;
    sender_.on_sent(*picked, head_bytes[c]);
    queues_[c].pop_front();
    pushed = true;
  }
  if (pushed) inner_->kick();
}

bool FlowNodePort::try_send(std::span<const std::byte> frame) {
  if (frame.size() > max_frame_bytes()) {
    throw FrameTooLarge("a " + std::to_string(frame.size()) + " B frame does not fit the " +
                        inner_->transport() + " transport with the link layer's trailer (at most " +
                        std::to_string(max_frame_bytes()) + " B)");
  }
  const TimeNs now = monotonic_now_ns();
  reset_if_link_restarted();
  const TrafficClass c = traffic_class_of(frame);
  // Nothing waits and nothing is owed: straight down if the credit allows, without a copy.
  if (frames_queued() == 0 && !control_owed() && send_alone(c, frame, now)) return true;
  queues_[static_cast<std::size_t>(c)].emplace_back(frame.begin(), frame.end());
  push_output(now);
  return true;
}

bool FlowNodePort::send_alone(TrafficClass c, std::span<const std::byte> frame, TimeNs now) {
  if (!inner_->can_send()) return false;
  std::array<bool, kTrafficClasses> waiting{};
  std::array<std::size_t, kTrafficClasses> head_bytes{};
  waiting[static_cast<std::size_t>(c)] = true;
  head_bytes[static_cast<std::size_t>(c)] = frame.size();
  if (!sender_.pick(waiting, head_bytes, now) || !inner_->try_send(frame)) return false;
  sender_.on_sent(c, frame.size());
  return true;  // the caller kicks after its batch
}

std::size_t FlowNodePort::receive(std::size_t max, FrameSink& sink) {
  const TimeNs now = monotonic_now_ns();
  Accounting accounting(*this, sink, now);
  const std::size_t taken = inner_->receive(max, accounting);
  // Credit that came in may let waiting frames go; frames that arrived may make an update due.
  push_output(now);
  return taken;
}

void FlowNodePort::wait(std::int64_t timeout_ns, const std::function<bool()>& also_ready) {
  timeout_ns = until_deadline(timeout_ns, next_timer_ns(), monotonic_now_ns());
  if (timeout_ns == 0) return;
  inner_->wait(timeout_ns, [&] {
    return (also_ready && also_ready()) || (control_owed() && inner_->can_send()) ||
           sendable(monotonic_now_ns());
  });
}

bool FlowNodePort::has_input() {
  if (inner_->has_input()) return true;
  return (control_owed() && inner_->can_send()) || sendable(monotonic_now_ns());
}

std::optional<std::uint64_t> FlowNodePort::next_timer_ns() const {
  const std::optional<std::uint64_t> next = inner_->next_timer_ns();
  const TimeNs now = monotonic_now_ns();
  TimeNs mine = FlowSender::kNever;
  // A pause ends with time, not with a frame (PFC); credit comes with a frame (CBFC: kNever).
  if (frames_queued() > 0) mine = sender_.resume_at_ns(now);
  // Output the link layer had no room for: a transmit ring's room signals nothing, so look
  // again soon (as LlrNodePort does for its own).
  if (holding_control_ || (frames_queued() > 0 && !inner_->can_send())) {
    mine = std::min(mine, now + kBlockedPollNs);
  }
  if (mine == FlowSender::kNever) return next;
  return next ? std::min<std::uint64_t>(*next, mine) : mine;
}

NodeLinkLayer link_layer_of(const NodePort& port) {
  if (const auto* flow = dynamic_cast<const FlowNodePort*>(&port)) {
    return {&flow->link_retry_port(), flow};
  }
  return {dynamic_cast<const LlrNodePort*>(&port), nullptr};
}

}  // namespace ethx
