#include "packet-engine/reliable_links.hpp"

#include <algorithm>
#include <functional>
#include <optional>

namespace ethx {
namespace {

// Serial-number arithmetic (RFC 1982) on 32-bit sequence numbers, so wrap-around is harmless.
bool seq_before(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(a - b) < 0;
}

std::uint8_t credit_byte(std::uint32_t window_frames) {
  return static_cast<std::uint8_t>(std::clamp<std::uint32_t>(window_frames, 1, kMaxWindowFrames));
}

}  // namespace

ReliableLinks::ReliableLinks(const EngineConfig& config)
    : config_(config),
      rx_(config.gpu_macs.size()),
      tx_(config.gpu_macs.size()),
      control_builder_(wire::kMinFrameBytesMax, config.crc) {
  for (PeerTx& peer : tx_) {
    // Until a peer says otherwise, assume it grants what we grant.
    peer.credits = credit_byte(config.reliability.window_frames);
    peer.retransmit_timeout_ns = config.reliability.retransmit_timeout_ns;
  }
}

void ReliableLinks::arm(GpuId peer, TimeNs at_ns) {
  PeerRx& rx = rx_[peer];
  if (rx.armed_ns != kNotArmed && rx.armed_ns <= at_ns) return;
  // An entry already in the heap for a later time becomes stale: armed_ns no longer names it.
  rx.armed_ns = at_ns;
  deadlines_.push_back(Deadline{at_ns, peer});
  std::push_heap(deadlines_.begin(), deadlines_.end(), std::greater<>());
}

void ReliableLinks::pop_deadline() {
  std::pop_heap(deadlines_.begin(), deadlines_.end(), std::greater<>());
  deadlines_.pop_back();
}

TimeNs ReliableLinks::next_deadline(GpuId peer) const {
  const PeerTx& tx = tx_[peer];
  const PeerRx& rx = rx_[peer];
  TimeNs next = kNotArmed;
  if (!tx.unacked.empty()) next = tx.retransmit_at_ns;
  if (rx.ack_owed) next = std::min(next, rx.ack_due_ns);
  return next;
}

std::uint8_t ReliableLinks::take_ack_fields(GpuId dst, std::uint32_t& ack, std::uint8_t& credits) {
  PeerRx& peer = rx_[dst];
  ack = peer.expected_seq - 1;
  credits = credit_byte(config_.reliability.window_frames);
  // Nothing received in sequence from this peer yet: nothing to acknowledge.
  if (peer.expected_seq == 1 && !peer.ack_owed) return 0;
  peer.ack_owed = false;
  peer.delivered_since_ack = 0;
  return wire::kFlagAck | wire::kFlagCredit;
}

void ReliableLinks::send(GpuId dst, wire::FrameBuilder& builder, TimeNs now, Effects& effects) {
  if (!sequencing()) {
    std::uint32_t ack = 0;
    std::uint8_t credits = 0;
    const std::uint8_t flags = take_ack_fields(dst, ack, credits);
    effects.send.push_back(builder.finish(flags, 0, ack, credits));
    return;
  }
  PeerTx& peer = tx_[dst];
  if (peer.waiting.empty() && peer.unacked.size() < peer.credits) {
    // Stamped as it is finished: one CRC pass, not a second one to restamp it.
    LinkStamp stamp = next_stamp(dst);
    record_sent(dst, stamp.seq, builder.finish(stamp.flags, stamp.seq, stamp.ack, stamp.credits),
                now, effects);
    return;
  }
  ++counters_.frames_held;
  ++frames_waiting_;
  peer.waiting.push_back(builder.finish());
}

ReliableLinks::LinkStamp ReliableLinks::next_stamp(GpuId dst) {
  LinkStamp stamp;
  stamp.flags = wire::kFlagSeq | take_ack_fields(dst, stamp.ack, stamp.credits);
  stamp.seq = tx_[dst].next_seq++;
  return stamp;
}

void ReliableLinks::record_sent(GpuId dst, std::uint32_t seq, wire::Frame frame, TimeNs now,
                                Effects& effects) {
  PeerTx& peer = tx_[dst];
  if (peer.unacked.empty()) {
    peer.retransmit_at_ns = now + peer.retransmit_timeout_ns;
    arm(dst, peer.retransmit_at_ns);
  }
  peer.unacked.push_back(SentFrame{seq, effects.copy_frame(frame), now, false});
  ++frames_unacked_;
  ++counters_.frames_sequenced;
  effects.send.push_back(std::move(frame));
}

void ReliableLinks::resend_unacked(GpuId dst, TimeNs now, Effects& effects, std::size_t count) {
  PeerTx& peer = tx_[dst];
  for (std::size_t index = 0; index < peer.unacked.size() && index < count; ++index) {
    SentFrame& sent = peer.unacked[index];
    // A resent frame carries the current ACK, not the one it left with the first time.
    std::uint32_t ack = 0;
    std::uint8_t credits = 0;
    const std::uint8_t flags = wire::kFlagSeq | take_ack_fields(dst, ack, credits);
    wire::restamp_link_fields(sent.bytes, flags, sent.seq, ack, credits, config_.crc);
    sent.resent = true;
    effects.send.push_back(effects.copy_frame(sent.bytes));
  }
  peer.retransmit_at_ns = now + peer.retransmit_timeout_ns;
  arm(dst, peer.retransmit_at_ns);
}

void ReliableLinks::release_waiting(GpuId dst, TimeNs now, Effects& effects) {
  PeerTx& peer = tx_[dst];
  while (!peer.waiting.empty() && peer.unacked.size() < peer.credits) {
    wire::Frame frame = std::move(peer.waiting.front());
    peer.waiting.pop_front();
    --frames_waiting_;
    const LinkStamp stamp = next_stamp(dst);
    wire::restamp_link_fields(frame, stamp.flags, stamp.seq, stamp.ack, stamp.credits, config_.crc);
    record_sent(dst, stamp.seq, std::move(frame), now, effects);
  }
}

void ReliableLinks::on_ack(GpuId src, const wire::FrameView& frame, TimeNs now, Effects& effects) {
  PeerTx& peer = tx_[src];
  // An ACK must name a frame we sent: between one before the oldest unacknowledged frame and
  // the last one sent. Anything else comes from a confused or forged peer and changes nothing.
  const std::uint32_t last_sent = peer.next_seq - 1;
  if (seq_before(last_sent, frame.ack)) {
    ++counters_.bad_acks;
    return;
  }
  bool advanced = false;
  std::optional<TimeNs> rtt_ns;
  while (!peer.unacked.empty() && !seq_before(frame.ack, peer.unacked.front().seq)) {
    SentFrame& acked = peer.unacked.front();
    if (!acked.resent) rtt_ns = now - acked.sent_ns;
    // The copy's buffer builds a later frame instead of going back to the allocator.
    effects.spare.push_back(std::move(acked.bytes));
    peer.unacked.pop_front();
    --frames_unacked_;
    advanced = true;
  }
  if (advanced) {
    ++counters_.acks_received;
    if (rtt_ns) sample_rtt(peer, *rtt_ns);
    // Later than before: the heap's entry is moved when it comes up (poll_deadlines).
    peer.retransmit_at_ns = now + peer.retransmit_timeout_ns;
    if (peer.probing) {
      // The probe got through: whatever is still unacknowledged was lost after it.
      peer.probing = false;
      if (!peer.unacked.empty() && (frame.flags & wire::kFlagNak) == 0) {
        counters_.retransmitted_on_timer += peer.unacked.size();
        resend_unacked(src, now, effects);
      }
    }
  }
  if ((frame.flags & wire::kFlagCredit) != 0)
    peer.credits = std::max<std::uint8_t>(frame.credits, 1);
  if ((frame.flags & wire::kFlagNak) != 0 && !peer.unacked.empty()) {
    ++counters_.naks_received;
    counters_.retransmitted_on_nak += peer.unacked.size();
    resend_unacked(src, now, effects);
  }
  release_waiting(src, now, effects);
}

void ReliableLinks::sample_rtt(PeerTx& peer, TimeNs rtt_ns) {
  if (peer.smoothed_rtt_ns == 0) {
    peer.smoothed_rtt_ns = rtt_ns;
    peer.rtt_variation_ns = rtt_ns / 2;
  } else {
    const TimeNs error_ns = peer.smoothed_rtt_ns > rtt_ns ? peer.smoothed_rtt_ns - rtt_ns
                                                          : rtt_ns - peer.smoothed_rtt_ns;
    peer.rtt_variation_ns = (3 * peer.rtt_variation_ns + error_ns) / 4;
    peer.smoothed_rtt_ns = (7 * peer.smoothed_rtt_ns + rtt_ns) / 8;
  }
  peer.retransmit_timeout_ns = std::clamp(peer.smoothed_rtt_ns + 4 * peer.rtt_variation_ns,
                                          config_.reliability.retransmit_timeout_ns,
                                          config_.reliability.retransmit_timeout_max_ns);
}

void ReliableLinks::owe_ack(GpuId peer_id, TimeNs due_ns) {
  PeerRx& peer = rx_[peer_id];
  if (!peer.ack_owed || due_ns < peer.ack_due_ns) peer.ack_due_ns = due_ns;
  peer.ack_owed = true;
  arm(peer_id, peer.ack_due_ns);
}

void ReliableLinks::send_control(GpuId dst, bool nak, Effects& effects) {
  control_builder_.start(wire::FrameAddress{config_.gpu_macs[dst], config_.self_mac, config_.self,
                                            dst, config_.partition, config_.incarnation},
                         effects.take_spare());
  std::uint32_t ack = 0;
  std::uint8_t credits = 0;
  take_ack_fields(dst, ack, credits);
  std::uint8_t flags = wire::kFlagAck | wire::kFlagCredit;
  if (nak) flags |= wire::kFlagNak;
  effects.send.push_back(control_builder_.finish(flags, 0, ack, credits));
  ++(nak ? counters_.naks_sent : counters_.acks_sent);
}

bool ReliableLinks::on_receive(const wire::FrameView& frame, TimeNs now, Effects& effects) {
  const bool sequenced = (frame.flags & wire::kFlagSeq) != 0;
  if (frame.src_gpu >= rx_.size()) {
    if (sequenced || (frame.flags & wire::kFlagAck) != 0) {
      ++counters_.unknown_peer;
      return false;
    }
    return true;  // unsequenced: the completer answers it with an error it can route or not
  }
  const GpuId src = frame.src_gpu;
  check_incarnation(src, frame.incarnation, now, effects);
  if ((frame.flags & wire::kFlagAck) != 0) on_ack(src, frame, now, effects);
  if (!sequenced) return frame.txn_count > 0;

  PeerRx& peer = rx_[src];
  if (frame.seq == peer.expected_seq) {
    ++peer.expected_seq;
    peer.nak_sent = false;
    ++counters_.frames_in_order;
    // Acknowledge at once when half the credits are used, so the sender never stalls on a
    // window that is full only because our ACK is waiting.
    const std::uint32_t half_window = std::max<std::uint32_t>(1, tx_[src].credits / 2);
    ++peer.delivered_since_ack;
    owe_ack(src,
            peer.delivered_since_ack >= half_window ? now : now + config_.reliability.ack_delay_ns);
    return true;
  }
  if (seq_before(frame.seq, peer.expected_seq)) {
    // Our ACK was lost or the sender timed out early: repeat it, perform nothing twice.
    ++counters_.duplicates_dropped;
    owe_ack(src, now);
    return false;
  }
  ++counters_.gaps_dropped;
  if (!peer.nak_sent) {
    peer.nak_sent = true;
    send_control(src, true, effects);
  }
  return false;
}

void ReliableLinks::check_incarnation(GpuId src, std::uint32_t incarnation, TimeNs now,
                                      Effects& effects) {
  PeerRx& peer = rx_[src];
  // The usual case, read only: the same incarnation as last time.
  if (peer.incarnation_known && peer.incarnation == incarnation) return;
  if (peer.incarnation_known) {
    ++counters_.peer_restarts;
    reset_peer(src);
    if (sequencing()) release_waiting(src, now, effects);
  }
  peer.incarnation_known = true;
  peer.incarnation = incarnation;
}

void ReliableLinks::reset_peer(GpuId src) {
  PeerTx& peer = tx_[src];
  PeerRx& rx = rx_[src];
  // What the old incarnation did not acknowledge may or may not have been performed before it
  // died; sending it to the new one would perform it on memory that never saw the writes
  // before it. Its requests time out instead. Frames still waiting for credit were never
  // sent, so they go to the new incarnation, numbered from 1.
  frames_unacked_ -= peer.unacked.size();
  peer.unacked.clear();
  peer.next_seq = 1;
  peer.credits = credit_byte(config_.reliability.window_frames);
  peer.retransmit_timeout_ns = config_.reliability.retransmit_timeout_ns;
  peer.smoothed_rtt_ns = 0;
  peer.rtt_variation_ns = 0;
  peer.probing = false;
  rx.expected_seq = 1;
  rx.delivered_since_ack = 0;
  rx.ack_owed = false;
  rx.nak_sent = false;
}

void ReliableLinks::run_timers(GpuId id, TimeNs now, Effects& effects) {
  PeerTx& peer = tx_[id];
  PeerRx& rx = rx_[id];
  if (!peer.unacked.empty() && now >= peer.retransmit_at_ns) {
    ++counters_.retransmit_timeouts;
    ++counters_.retransmitted_on_timer;
    peer.retransmit_timeout_ns =
        std::min(peer.retransmit_timeout_ns * 2, config_.reliability.retransmit_timeout_max_ns);
    peer.probing = true;
    resend_unacked(id, now, effects, 1);
  }
  if (rx.ack_owed && now >= rx.ack_due_ns) send_control(id, false, effects);
}

void ReliableLinks::poll_deadlines(TimeNs now, Effects& effects) {
  while (!deadlines_.empty()) {
    const Deadline top = deadlines_.front();
    PeerRx& rx = rx_[top.peer];
    if (top.at_ns != rx.armed_ns) {  // stale: the peer was armed earlier since
      pop_deadline();
      continue;
    }
    const TimeNs next = next_deadline(top.peer);
    if (next != top.at_ns) {  // moved later, or nothing left (an ACK rode on a frame)
      pop_deadline();
      rx.armed_ns = kNotArmed;
      if (next != kNotArmed) arm(top.peer, next);
      continue;
    }
    if (top.at_ns > now) {
      effects.wake_no_later_than(top.at_ns);
      return;
    }
    pop_deadline();
    rx.armed_ns = kNotArmed;
    run_timers(top.peer, now, effects);
    const TimeNs again = next_deadline(top.peer);
    if (again != kNotArmed) arm(top.peer, again);
  }
}

}  // namespace ethx
