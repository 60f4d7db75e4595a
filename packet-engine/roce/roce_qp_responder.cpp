// The responder half of a queue pair: expected PSN, duplicates, RNR, memory checks, and the
// execution of SEND, WRITE, READ and atomics (IBA 9.7.4.1, 9.7.5.1).
#include "packet-engine/roce/roce_qp.hpp"

#include <algorithm>
#include <cstring>

#include "packet-engine/roce/roce_qp_internal.hpp"

namespace ethx::roce {

using namespace detail;

void QueuePair::on_request(const PacketView& packet, TimeNs /*now*/, Effects& effects) {
  const std::int32_t offset = psn_diff(packet.psn, epsn_);
  if (offset < 0) {
    on_duplicate(packet, effects);
    return;
  }
  if (offset > 0) {
    ++node_.counters.out_of_sequence;
    if (!nak_sent_) {
      nak_sent_ = true;
      ++node_.counters.seq_naks_sent;
      send_ack(epsn_,
               make_syndrome(AethKind::kNak, static_cast<std::uint8_t>(NakCode::kPsnSequenceError)),
               effects);
    }
    return;
  }
  nak_sent_ = false;
  if (!check_sequence(packet.opcode)) {
    send_nak(packet.psn, NakCode::kInvalidRequest, effects);
    return;
  }
  if (is_send(packet.opcode)) {
    do_send(packet, effects);
  } else if (is_write(packet.opcode)) {
    do_write(packet, effects);
  } else if (packet.opcode == Opcode::kReadRequest) {
    do_read(packet, packet.psn, false, effects);
  } else {
    do_atomic(packet, effects);
  }
}

// A MIDDLE or LAST packet must continue a message of its kind; FIRST, ONLY, READ and atomics
// must not interrupt one (IBA 9.7.5.1.1 C9-87).
bool QueuePair::check_sequence(Opcode opcode) const {
  if (is_first_or_only(opcode)) return in_message_ == InMessage::kNone;
  if (is_send(opcode)) return in_message_ == InMessage::kSend;
  return in_message_ == InMessage::kWrite;
}

void QueuePair::do_send(const PacketView& packet, Effects& effects) {
  const std::uint64_t mtu = config_.path_mtu_bytes;
  const std::size_t length = packet.payload.size();
  const bool first = is_first_or_only(packet.opcode);
  const bool last = is_last_or_only(packet.opcode);
  if (length > mtu || (!last && length != mtu) || (last && !first && length == 0)) {
    send_nak(packet.psn, NakCode::kInvalidRequest, effects);
    return;
  }
  if (first && recv_queue_.empty()) {
    // Receiver not ready: the requester waits the advertised time and resends from here.
    ++node_.counters.rnr_naks_sent;
    nak_sent_ = true;  // packets after this one are dropped silently until the resend
    send_ack(packet.psn, make_syndrome(AethKind::kRnrNak, config_.min_rnr_timer_code), effects);
    return;
  }
  if (first) recv_offset_ = 0;
  RecvWr& recv = recv_queue_.front();
  const WcStatus placed = scatter(recv.sg_list, recv_offset_, packet.payload);
  if (placed != WcStatus::kSuccess) {
    complete(recv_cq_,
             WorkCompletion{
                 .wr_id = recv.wr_id, .status = placed, .opcode = WcOpcode::kRecv, .qp_num = qpn_});
    recv_queue_.pop_front();
    send_nak(packet.psn,
             placed == WcStatus::kLocalLengthError ? NakCode::kInvalidRequest
                                                   : NakCode::kRemoteOperationalError,
             effects);
    return;
  }
  recv_offset_ += length;
  in_message_ = last ? InMessage::kNone : InMessage::kSend;
  if (last) {
    complete(recv_cq_, WorkCompletion{.wr_id = recv.wr_id,
                                      .status = WcStatus::kSuccess,
                                      .opcode = WcOpcode::kRecv,
                                      .byte_len = static_cast<std::uint32_t>(recv_offset_),
                                      .qp_num = qpn_,
                                      .with_imm = packet.imm.has_value(),
                                      .imm_data = packet.imm.value_or(0)});
    recv_queue_.pop_front();
    msn_ = psn_add(msn_, 1);
    ++node_.counters.requests_executed;
  }
  epsn_ = psn_add(epsn_, 1);
  if (packet.ack_request)
    send_ack(packet.psn, make_syndrome(AethKind::kAck, kAckCreditsInvalid), effects);
}

void QueuePair::do_write(const PacketView& packet, Effects& effects) {
  const std::uint64_t mtu = config_.path_mtu_bytes;
  const std::size_t length = packet.payload.size();
  const bool first = is_first_or_only(packet.opcode);
  const bool last = is_last_or_only(packet.opcode);
  if (first) {
    const Reth& reth = *packet.reth;
    const std::uint64_t total = reth.dma_length.value();
    // ONLY carries the whole message; FIRST exactly one MTU of a longer one.
    if ((last && length != total) || (!last && (length != mtu || total <= mtu))) {
      send_nak(packet.psn, NakCode::kInvalidRequest, effects);
      return;
    }
    std::span<std::byte> unused;
    if (!remote_check(reth.rkey.value(), reth.virtual_address.value(), total, kAccessRemoteWrite,
                      unused)) {
      send_nak(packet.psn, NakCode::kRemoteAccessError, effects);
      return;
    }
    write_va_ = reth.virtual_address.value();
    write_rkey_ = reth.rkey.value();
    write_remaining_ = total;
    write_total_ = total;
  } else if (length > write_remaining_ || (!last && length != mtu) ||
             (last && length != write_remaining_)) {
    send_nak(packet.psn, NakCode::kInvalidRequest, effects);
    return;
  }
  if (packet.imm && recv_queue_.empty()) {  // WRITE with immediate consumes a receive WR
    ++node_.counters.rnr_naks_sent;
    nak_sent_ = true;
    send_ack(packet.psn, make_syndrome(AethKind::kRnrNak, config_.min_rnr_timer_code), effects);
    return;
  }
  std::span<std::byte> target;
  if (!remote_check(write_rkey_, write_va_, length, kAccessRemoteWrite, target)) {
    send_nak(packet.psn, NakCode::kRemoteAccessError, effects);  // region gone mid-message
    return;
  }
  if (length != 0) std::memcpy(target.data(), packet.payload.data(), length);
  write_va_ += length;
  write_remaining_ -= length;
  in_message_ = last ? InMessage::kNone : InMessage::kWrite;
  if (last) {
    if (packet.imm) {
      const RecvWr recv = recv_queue_.front();
      recv_queue_.pop_front();
      complete(recv_cq_, WorkCompletion{.wr_id = recv.wr_id,
                                        .status = WcStatus::kSuccess,
                                        .opcode = WcOpcode::kRecvRdmaWithImm,
                                        .byte_len = static_cast<std::uint32_t>(write_total_),
                                        .qp_num = qpn_,
                                        .with_imm = true,
                                        .imm_data = *packet.imm});
    }
    msn_ = psn_add(msn_, 1);
    ++node_.counters.requests_executed;
  }
  epsn_ = psn_add(epsn_, 1);
  if (packet.ack_request)
    send_ack(packet.psn, make_syndrome(AethKind::kAck, kAckCreditsInvalid), effects);
}

// Serves a READ request starting at `psn` (a duplicate re-executes: READ is idempotent, IBA
// 9.7.5.1.4). The responses use PSNs psn .. psn + n - 1.
void QueuePair::do_read(const PacketView& packet, std::uint32_t psn, bool duplicate,
                        Effects& effects) {
  const Reth& reth = *packet.reth;
  const std::uint64_t length = reth.dma_length.value();
  std::span<std::byte> source;
  if (!remote_check(reth.rkey.value(), reth.virtual_address.value(), length, kAccessRemoteRead,
                    source)) {
    if (!duplicate) send_nak(psn, NakCode::kRemoteAccessError, effects);
    return;
  }
  const std::uint64_t mtu = config_.path_mtu_bytes;
  const auto packets = static_cast<std::uint32_t>(length == 0 ? 1 : (length + mtu - 1) / mtu);
  if (!duplicate) {
    msn_ = psn_add(msn_, 1);
    epsn_ = psn_add(epsn_, packets);
    ++node_.counters.requests_executed;
  }
  for (std::uint32_t i = 0; i < packets; ++i) {
    const Opcode opcode = read_response_opcode(i, packets);
    PacketFields f = fields(opcode, psn_add(psn, i));
    f.syndrome = make_syndrome(AethKind::kAck, kAckCreditsInvalid);
    f.msn = msn_;
    const std::uint64_t offset = i * mtu;
    emit(f, source.subspan(offset, std::min<std::uint64_t>(mtu, length - offset)), effects);
  }
}

void QueuePair::do_atomic(const PacketView& packet, Effects& effects) {
  const AtomicEth& atomic = *packet.atomic_eth;
  const std::uint64_t va = atomic.virtual_address.value();
  if (va % 8 != 0) {  // IBA 9.4.5: atomics must be naturally aligned
    send_nak(packet.psn, NakCode::kInvalidRequest, effects);
    return;
  }
  std::span<std::byte> target;
  if (!remote_check(atomic.rkey.value(), va, 8, kAccessRemoteAtomic, target)) {
    send_nak(packet.psn, NakCode::kRemoteAccessError, effects);
    return;
  }
  const std::uint64_t original = load_u64(target);
  if (packet.opcode == Opcode::kFetchAdd) {
    store_u64(target, original + atomic.swap_add.value());
  } else if (original == atomic.compare.value()) {
    store_u64(target, atomic.swap_add.value());
  }
  if (atomic_replay_.empty()) {
    atomic_replay_.resize(std::max<std::uint32_t>(config_.atomic_replay_entries, 1));
  }
  atomic_replay_[atomic_replay_next_] = {packet.psn, original, true};
  atomic_replay_next_ = (atomic_replay_next_ + 1) % atomic_replay_.size();
  msn_ = psn_add(msn_, 1);
  epsn_ = psn_add(epsn_, 1);
  ++node_.counters.requests_executed;
  PacketFields f = fields(Opcode::kAtomicAcknowledge, packet.psn);
  f.syndrome = make_syndrome(AethKind::kAck, kAckCreditsInvalid);
  f.msn = msn_;
  f.atomic_original = original;
  emit(f, {}, effects);
}

// Duplicates (IBA 9.7.5.1.4): SEND/WRITE are acknowledged, not performed again; READ is
// executed again; an atomic is answered with the saved result, never performed twice.
void QueuePair::on_duplicate(const PacketView& packet, Effects& effects) {
  if (packet.opcode == Opcode::kReadRequest) {
    ++node_.counters.duplicate_reads;
    do_read(packet, packet.psn, true, effects);
    return;
  }
  if (is_atomic(packet.opcode)) {
    for (const AtomicReplay& replay : atomic_replay_) {
      if (replay.valid && replay.psn == packet.psn) {
        ++node_.counters.duplicate_atomics;
        PacketFields f = fields(Opcode::kAtomicAcknowledge, packet.psn);
        f.syndrome = make_syndrome(AethKind::kAck, kAckCreditsInvalid);
        f.msn = msn_;
        f.atomic_original = replay.original;
        emit(f, {}, effects);
        return;
      }
    }
    ++node_.counters.duplicate_atomic_misses;
    return;
  }
  ++node_.counters.duplicate_requests;
  if (packet.ack_request) {
    send_ack(psn_add(epsn_, -1), make_syndrome(AethKind::kAck, kAckCreditsInvalid), effects);
  }
}

bool QueuePair::remote_check(std::uint32_t rkey, std::uint64_t addr, std::uint64_t length,
                             std::uint32_t right, std::span<std::byte>& out) {
  switch (node_.memory.check_remote(rkey, addr, length, right, out)) {
    case KeyCheck::kOk:
      return true;
    case KeyCheck::kBadKey:
      ++node_.counters.access_bad_rkey;
      return false;
    case KeyCheck::kOutOfRange:
      ++node_.counters.access_out_of_range;
      return false;
    case KeyCheck::kNoRights:
      ++node_.counters.access_no_rights;
      return false;
  }
  return false;
}

void QueuePair::send_ack(std::uint32_t psn, std::uint8_t syndrome, Effects& effects) {
  if (syndrome_kind(syndrome) == AethKind::kAck) ++node_.counters.acks_sent;
  PacketFields f = fields(Opcode::kAcknowledge, psn);
  f.syndrome = syndrome;
  f.msn = msn_;
  emit(f, {}, effects);
}

// Class B/C errors (IBA 9.9.3): NAK the request and enter the error state.
void QueuePair::send_nak(std::uint32_t psn, NakCode code, Effects& effects) {
  switch (code) {
    case NakCode::kRemoteAccessError:
      ++node_.counters.access_naks_sent;
      break;
    case NakCode::kInvalidRequest:
      ++node_.counters.invalid_naks_sent;
      break;
    default:
      ++node_.counters.operational_naks_sent;
      break;
  }
  send_ack(psn, make_syndrome(AethKind::kNak, static_cast<std::uint8_t>(code)), effects);
  enter_error();
}

}  // namespace ethx::roce
