// The switch core's link layer: link-level retry on a port's hop, and faults on what a port
// sends (docs/link-layer.md). A port with either prepares the frame it sends next ("staged"):
// an ACK or NAK first, then replays, then the head of its egress queue with its trailer, each
// run through the tx faults. The runtime sees only front() / pop() as before.
#include <stdexcept>
#include <string>

#include "switch/core/switch_core.hpp"

namespace ethx {
namespace {

// The source MAC of a switch port's link control frames: locally administered, in the
// fabric's 02:e7:68 block with 0xff where a GPU MAC has 0x00, then the port number.
MacAddr port_mac(PortId port) {
  return MacAddr{{0x02, 0xe7, 0x68, 0xff, static_cast<std::uint8_t>(port >> 8),
                  static_cast<std::uint8_t>(port & 0xff)}};
}

}  // namespace

void SwitchCore::add_link_retry(PortId port) {
  ports_[port].llr = std::make_unique<LinkRetry>(config_.link_retry, config_.crc);
  // Its TRAIN is due at once: the runtime's first release_held sends it.
  if (config_.link_training)
    ports_[port].llr->start_training(static_cast<std::uint32_t>(training_rng_()), now_ns_);
  ports_[port].staging = true;
  llr_ports_.push_back(port);
  note_timers(port);
}

void SwitchCore::note_timers(PortId port) {
  const Port& p = ports_[port];
  if (p.llr) link_timers_.set(port, p.up ? p.llr->next_deadline_ns() : EarliestDeadline::kNever);
  if (!p.flow) return;
  // What next_flow_deadline_ns() waits for on this port: a pause that holds its frames back
  // ending, and the receiver's XOFF to renew.
  TimeNs at_ns = EarliestDeadline::kNever;
  if (p.up) {
    if (p.flow->blocked && !p.has_staged) at_ns = p.flow->retry_at_ns;
    at_ns = std::min(at_ns, p.flow->receiver.next_deadline_ns());
  }
  flow_timers_.set(port, at_ns);
}

bool SwitchCore::accept_link_frame(PortId ingress, Incoming& frame, TimeNs now,
                                   std::vector<PortId>& egress_touched) {
  Port& in = ports_[ingress];
  std::size_t payload_bytes = 0;
  const std::uint64_t trainings_answered = in.llr->counters().trainings_answered;
  const LinkRetry::Verdict verdict = in.llr->receive(frame.bytes, now, payload_bytes);
  // The far end started afresh (a GPU's process restarted) and starts from full credit: so
  // does this end (FlowNodePort resets likewise when this port trains).
  if (in.flow && in.llr->counters().trainings_answered != trainings_answered) reset_flow(ingress);
  // An ACK may free the replay buffer, a NAK start a replay, a frame make an ACK due.
  restage(ingress, now, &egress_touched);
  if (verdict != LinkRetry::Verdict::kDeliver) {
    keep_spare(frame);
    return false;
  }
  if (frame.owner) {
    frame.owner->resize(payload_bytes);
    frame.bytes = *frame.owner;
  } else {
    frame.bytes = frame.bytes.first(payload_bytes);
  }
  return true;
}

void SwitchCore::restage(PortId egress, TimeNs now, std::vector<PortId>* egress_touched) {
  Port& port = ports_[egress];
  if (port.up) {
    while (!port.has_staged && take_next(egress, port.staged.bytes, now)) {
      port.has_staged = survives_tx_faults(port, port.staged.bytes);
    }
    if (port.has_staged && egress_touched) egress_touched->push_back(egress);
  }
  // Every change to a port's link-level retry passes here (a frame received and its ACK or
  // NAK, a frame taken to send, its timer run), and to its flow control's sending side.
  note_timers(egress);
}

void SwitchCore::keep_spare(const Incoming& consumed) {
  constexpr std::size_t kMaxSpareFrames = 64;  // a few per port's worth: they are reused at once
  if (consumed.owner == nullptr || spare_frames_.size() >= kMaxSpareFrames) return;
  spare_frames_.push_back(std::move(*consumed.owner));
  consumed.owner->clear();  // moved from: empty, as the runtime expects of a frame it gave
}

void SwitchCore::lend_spare(Port& port, wire::Frame& out) {
  if (out.capacity() > 0 || spare_frames_.empty()) return;
  // Only for a frame the port writes itself (a queued frame brings its own buffer, and one
  // lent to it would be freed).
  const bool writes_own =
      (port.llr && port.llr->has_output()) || (port.flow && port.flow->receiver.control_due());
  if (!writes_own) return;
  out.swap(spare_frames_.back());
  spare_frames_.pop_back();
}

bool SwitchCore::take_next(PortId egress, wire::Frame& out, TimeNs now) {
  Port& port = ports_[egress];
  lend_spare(port, out);
  if (port.llr && port.llr->take_control(out, port_mac(egress))) return true;
  // A credit update or pause frame the port owes goes before data (and through LLR as data).
  if (port.flow && port.flow->receiver.control_due() &&
      (!port.llr || port.llr->can_send(sizeof(PfcFrame))) &&
      port.flow->receiver.take_control(out, port_mac(egress), now)) {
    if (port.llr) port.llr->stamp(out, now);
    return true;
  }
  if (port.llr && port.llr->take_replay(out, now)) return true;
  if (port.flow) return take_scheduled(egress, out, now);
  if (port.queue.empty()) return false;
  QueuedFrame& head = port.queue.front();
  if (port.llr && !port.llr->can_send(head.bytes.size())) return false;  // waits for an ACK
  out.swap(head.bytes);
  port.staged.enqueued_ns = head.enqueued_ns;
  port.staged.ingress = head.ingress;
  port.queued_bytes -= out.size();
  port.queue.pop_front();
  if (port.llr) port.llr->stamp(out, now);
  return true;
}

bool SwitchCore::survives_tx_faults(Port& port, wire::Frame& frame) {
  const PortFaults& faults = port.tx_faults;
  if (!faults.any()) return true;
  std::uniform_real_distribution<double> chance(0.0, 1.0);
  if (faults.drop_rate > 0 && chance(fault_rng_) < faults.drop_rate) {
    ++port.counters.faults_tx_dropped;
    return false;
  }
  if (faults.corrupt_rate > 0 && !frame.empty() && chance(fault_rng_) < faults.corrupt_rate) {
    ++port.counters.faults_tx_corrupted;
    // Frames without a CRC (the simulator's) get the link's FCS first where link-level retry
    // checks one, so the flip is caught. Elsewhere nothing at the far end would look: the
    // receiving MAC's FCS check drops the frame, so it is lost.
    if (config_.crc == wire::Crc::kOff && !(port.llr && fill_llr_fcs(frame))) return false;
    const std::uint64_t bit = fault_rng_() % (frame.size() * 8);
    frame[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
  }
  return true;
}

void SwitchCore::after_tx(PortId egress, std::size_t frame_bytes, TimeNs now) {
  Port& port = ports_[egress];
  ++port.counters.tx_frames;
  port.counters.tx_bytes += frame_bytes;
  restage(egress, now);
}

void SwitchCore::run_link_timers(TimeNs now, std::vector<PortId>& egress_touched) {
  if (link_timers_.earliest_ns() > now) return;
  for (PortId port : llr_ports_) {
    if (link_timers_.at(port) > now) continue;  // kNever for a port that is down
    ports_[port].llr->on_time(now);
    restage(port, now, &egress_touched);
  }
}

void SwitchCore::reset_link(Port& port) {
  if (port.has_staged) ++port.counters.drops_link_down;
  port.has_staged = false;
  // A link that comes back up retrains: the far end takes our next frame as the start.
  if (port.llr) port.llr->reset();
}

void SwitchCore::set_tx_faults(PortId egress, const PortFaults& faults) {
  if (egress >= ports_.size()) return;
  for (const auto& [field, rate] :
       {std::pair{"drop_rate", faults.drop_rate}, std::pair{"corrupt_rate", faults.corrupt_rate}}) {
    if (!(rate >= 0.0 && rate <= 1.0)) {  // written so that NaN fails too
      throw std::invalid_argument(std::string(field) + " must be between 0 and 1 (got " +
                                  std::to_string(rate) + ")");
    }
  }
  // A port's sending side has no ingress link to stall or reorder, and no link state of its own.
  if (faults.reorder_rate > 0) throw std::invalid_argument("reorder_rate applies to rx only");
  if (faults.delay_spike_rate > 0 || faults.delay_spike_ns > 0) {
    throw std::invalid_argument("delay_spike_rate applies to rx only");
  }
  if (faults.link_down) throw std::invalid_argument("link applies to rx only");
  Port& port = ports_[egress];
  port.tx_faults = faults;
  port.staging = port.staging || faults.any();
  restage(egress, now_ns_);
}

const PortFaults& SwitchCore::tx_faults(PortId egress) const {
  return ports_.at(egress).tx_faults;
}

const LinkRetryCounters* SwitchCore::link_retry_counters(PortId port) const {
  return port < ports_.size() && ports_[port].llr ? &ports_[port].llr->counters() : nullptr;
}

}  // namespace ethx
