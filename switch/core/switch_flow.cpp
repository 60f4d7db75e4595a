// The switch core's flow control per traffic class ([link] flow_control; docs/link-layer.md):
// every port is both ends of its hop. As a receiver it counts the bytes of each class that
// arrived on it until they leave the switch, and owes its far end credit updates (CBFC) or
// pause frames (PFC); as a sender it keeps one egress queue per class and lets the far end's
// credits or pauses, and deficit round robin between the classes, pick the next frame.
#include <stdexcept>
#include <string>

#include "switch/core/switch_core.hpp"

namespace ethx {
void SwitchCore::add_flow_control(PortId port) {
  reset_flow(port);
  ports_[port].staging = true;
  flow_ports_.push_back(port);
}

void SwitchCore::reset_flow(PortId port) {
  // Frames that arrived on the port before are not the new hop's: they leave the switch
  // without giving credit to a far end that starts from full credit again.
  for (Port& other : ports_) {
    const auto forget = [port](Fifo<QueuedFrame>& queue) {
      for (std::size_t i = 0; i < queue.size(); ++i) {
        if (queue[i].ingress == port) queue[i].holds_ingress_buffer = false;
      }
    };
    forget(other.queue);
    if (other.flow) forget(other.flow->responses);
  }
  const FlowControlConfig& config = config_.flow_control;
  const SwitchPortConfig& link = config_.ports[port];
  std::optional<PfcThresholds> thresholds;
  if (config.mode == FlowControlMode::kPfc) {
    thresholds = pfc_thresholds(config.class_buffer_bytes, link.rate_gbps, link.propagation_ns,
                                config.frame_bytes_max);
    if (!thresholds) {
      throw std::invalid_argument(
          "class_buffer_bytes " + std::to_string(config.class_buffer_bytes) +
          " cannot hold PFC's headroom on port " + std::to_string(port) + ": at least " +
          std::to_string(
              min_pfc_buffer_bytes(link.rate_gbps, link.propagation_ns, config.frame_bytes_max)));
    }
  }
  std::unique_ptr<Port::Flow>& flow = ports_[port].flow;
  if (!flow) {
    flow = std::make_unique<Port::Flow>(Port::Flow{FlowSender(config, link.rate_gbps),
                                                   FlowReceiver(config, thresholds, link.rate_gbps),
                                                   {},
                                                   false,
                                                   0,
                                                   {}});
    note_timers(port);
    return;
  }
  // Frames queued for the far end stay (they are sent under the new hop's credit); the
  // counters stay too.
  flow->before_reset += flow->sender.counters();
  flow->before_reset += flow->receiver.counters();
  flow->sender = FlowSender(config, link.rate_gbps);
  flow->receiver = FlowReceiver(config, thresholds, link.rate_gbps);
  flow->blocked = false;
  flow->retry_at_ns = 0;
  note_timers(port);
}

bool SwitchCore::accept_flow_frame(PortId ingress, const Incoming& frame, TimeNs now,
                                   std::vector<PortId>& egress_touched) {
  Port& in = ports_[ingress];
  if (is_flow_control_frame(frame.bytes)) {
    in.flow->sender.on_control(frame.bytes, now);
    keep_spare(frame);
    restage(ingress, now, &egress_touched);  // credit or an XON may let a class go
    return true;
  }
  in.flow->receiver.on_arrival(traffic_class_of(frame.bytes), frame.bytes.size(), now);
  if (in.flow->receiver.control_due()) {
    restage(ingress, now, &egress_touched);  // an XOFF; restage notes the port's timers
  } else {
    note_timers(ingress);  // the receiver's XOFF renewal may have moved
  }
  return false;
}

bool SwitchCore::take_scheduled(PortId egress, wire::Frame& out, TimeNs now) {
  Port& port = ports_[egress];
  Port::Flow& flow = *port.flow;
  const std::array<Fifo<QueuedFrame>*, kTrafficClasses> queues{&port.queue, &flow.responses};
  std::array<bool, kTrafficClasses> waiting{};
  std::array<std::size_t, kTrafficClasses> head_bytes{};
  for (std::size_t c = 0; c < kTrafficClasses; ++c) {
    waiting[c] = !queues[c]->empty();
    if (waiting[c]) head_bytes[c] = queues[c]->front().bytes.size();
  }
  const std::optional<TrafficClass> picked = flow.sender.pick(waiting, head_bytes, now);
  if (!picked) {
    // Held back by the far end: credit comes with a frame (on_frame restages the port), a
    // pause ends with time (release_held at retry_at_ns).
    flow.blocked = waiting[0] || waiting[1];
    flow.retry_at_ns = flow.sender.resume_at_ns(now);
    return false;
  }
  flow.blocked = false;
  const auto c = static_cast<std::size_t>(*picked);
  QueuedFrame& head = queues[c]->front();
  if (port.llr && !port.llr->can_send(head.bytes.size())) return false;  // waits for an ACK
  const PortId ingress = head.ingress;
  const bool holds_buffer = head.holds_ingress_buffer;
  out.swap(head.bytes);
  port.staged.enqueued_ns = head.enqueued_ns;
  port.staged.ingress = ingress;
  port.queued_bytes -= out.size();
  flow.sender.on_sent(*picked, out.size());
  queues[c]->pop_front();
  if (holds_buffer) release_ingress_buffer(ingress, *picked, out.size());
  if (port.llr) port.llr->stamp(out, now);
  return true;
}

void SwitchCore::release_ingress_buffer(PortId ingress, TrafficClass c, std::size_t frame_bytes) {
  Port& in = ports_[ingress];
  if (!in.flow) return;
  in.flow->receiver.on_departure(c, frame_bytes);
  if (in.flow->receiver.control_due() && !in.has_staged) ready_ports_.push_back(ingress);
  note_timers(ingress);
}

void SwitchCore::run_flow_timers(TimeNs now, std::vector<PortId>& egress_touched) {
  // Swapped out first: restaging may make more ports ready.
  ready_taken_.clear();
  ready_taken_.swap(ready_ports_);
  for (PortId port : ready_taken_) restage(port, now, &egress_touched);
  // Only ports whose timer has come (a pause ending, an XOFF to renew): what else lets a port
  // send restages it when it happens (credit or an XON arriving, its buffer freed, an ACK).
  if (flow_timers_.earliest_ns() > now) return;
  for (PortId port : flow_ports_) {
    Port& p = ports_[port];
    if (flow_timers_.at(port) > now) continue;  // kNever for a port that is down
    p.flow->receiver.on_time(now);              // an XOFF to renew
    const bool control = p.flow->receiver.control_due();
    if (!p.has_staged && (control || (p.flow->blocked && p.flow->retry_at_ns <= now))) {
      restage(port, now, &egress_touched);  // notes its timers
    } else if (flow_timers_.at(port) <= now) {
      note_timers(port);  // on_time renewed an XOFF: its timer moved
    }
  }
}

TimeNs SwitchCore::next_flow_deadline_ns() const {
  if (!ready_ports_.empty()) return now_ns_;
  return flow_timers_.earliest_ns();  // note_timers() keeps every port's
}

// Everything queued on a port that went down is lost, and gives its ingress buffer back.
void SwitchCore::drop_queued(Port& port) {
  const auto drop_all = [&](Fifo<QueuedFrame>& queue, TrafficClass c) {
    port.counters.drops_link_down += queue.size();
    while (!queue.empty()) {
      const QueuedFrame& frame = queue.front();
      if (frame.holds_ingress_buffer) release_ingress_buffer(frame.ingress, c, frame.bytes.size());
      queue.pop_front();
    }
  };
  drop_all(port.queue, TrafficClass::kRequests);
  if (port.flow) drop_all(port.flow->responses, TrafficClass::kResponses);
  port.queued_bytes = 0;
}

std::optional<FlowControlCounters> SwitchCore::flow_control_counters(PortId port) const {
  if (port >= ports_.size() || !ports_[port].flow) return std::nullopt;
  FlowControlCounters total = ports_[port].flow->before_reset;
  total += ports_[port].flow->sender.counters();
  total += ports_[port].flow->receiver.counters();
  return total;
}

std::size_t SwitchCore::ingress_buffer_bytes(PortId ingress, TrafficClass c) const {
  if (ingress >= ports_.size() || !ports_[ingress].flow) return 0;
  return ports_[ingress].flow->receiver.occupancy_bytes(c);
}

std::size_t SwitchCore::credit_bytes(PortId egress, TrafficClass c) const {
  if (egress >= ports_.size() || !ports_[egress].flow) return 0;
  return ports_[egress].flow->sender.credit_bytes(c);
}

}  // namespace ethx
