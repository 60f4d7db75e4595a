// The requester half of a queue pair: send queue, PSN assignment, the window, ACK/NAK
// handling, go-back-N and completions (IBA 9.7.4, 9.7.5.2).
#include "packet-engine/roce/roce_qp.hpp"

#include <algorithm>
#include <array>

#include "packet-engine/roce/roce_qp_internal.hpp"

namespace ethx::roce {

using namespace detail;

// ---- requester -------------------------------------------------------------------------------

bool QueuePair::reads_or_atomic(const SendWqe& wqe) const {
  return is_read(wqe.wr) || is_atomic_wr(wqe.wr);
}

std::uint32_t QueuePair::last_psn(const SendWqe& wqe) const {
  return psn_add(wqe.first_psn, static_cast<std::int64_t>(wqe.packets) - 1);
}

// Where a resend of this WQE starts: READs re-request only what has not arrived (IBA 9.7.5.1.4
// allows a READ to be retried from a later PSN with adjusted address and length); SEND and
// WRITE resume after the last acknowledged packet.
std::uint32_t QueuePair::resume_psn(const SendWqe& wqe) const {
  if (reads_or_atomic(wqe)) return psn_add(wqe.first_psn, wqe.done_packets);
  if (psn_diff(acked_psn_, wqe.first_psn) >= 0) return psn_add(acked_psn_, 1);
  return wqe.first_psn;
}

QueuePair::SendWqe* QueuePair::find_wqe(std::uint32_t psn) {
  for (SendWqe& wqe : inflight_) {
    const std::int32_t offset = psn_diff(psn, wqe.first_psn);
    if (offset >= 0 && static_cast<std::uint32_t>(offset) < wqe.packets) return &wqe;
  }
  return nullptr;
}

std::uint32_t QueuePair::packets_for(const SendWr& wr, std::uint64_t bytes) const {
  if (is_atomic_wr(wr) || bytes == 0) return 1;
  return static_cast<std::uint32_t>((bytes + config_.path_mtu_bytes - 1) / config_.path_mtu_bytes);
}

// Starts the next pending WR if the PSN window and the initiator depth allow: checks its local
// buffers (a bad lkey completes it with a local error, as a NIC does when it fetches the WQE)
// and gives it its PSN range. False if nothing was started.
bool QueuePair::start_next_wqe(TimeNs now) {
  if (pending_.empty() || state_ != QpState::kRts) return false;
  const SendWr& wr = pending_.front();
  const std::uint64_t bytes = is_atomic_wr(wr) ? 8 : sg_bytes(wr.sg_list);
  const std::uint32_t packets = packets_for(wr, bytes);
  const bool rd_atomic = is_read(wr) || is_atomic_wr(wr);
  if (!inflight_.empty()) {
    const std::int64_t unacked = psn_diff(next_psn_, psn_add(acked_psn_, 1));
    if (unacked + packets > config_.max_inflight_packets) return false;
    if (rd_atomic && inflight_reads_ >= config_.max_rd_atomic) return false;
  }
  SendWqe wqe;
  wqe.wr = wr;
  wqe.bytes = bytes;
  wqe.packets = packets;
  wqe.first_psn = next_psn_;
  pending_.pop_front();

  // Local checks: gather buffers readable, READ/atomic targets writable, atomics exactly 8 B,
  // messages within the 2^31 B verbs limit.
  WcStatus local = WcStatus::kSuccess;
  if ((is_atomic_wr(wqe.wr) && sg_bytes(wqe.wr.sg_list) != 8) || bytes > (1ull << 31)) {
    local = WcStatus::kLocalLengthError;
  } else {
    for (const Sge& sge : wqe.wr.sg_list) {
      std::span<std::byte> unused;
      if (node_.memory.check_local(sge, rd_atomic, unused) != KeyCheck::kOk) {
        local = WcStatus::kLocalProtectionError;
        break;
      }
    }
  }
  if (inflight_.empty()) last_progress_ns_ = now;  // the ACK timer starts with the first WR
  next_psn_ = psn_add(next_psn_, packets);
  if (rd_atomic) ++inflight_reads_;
  inflight_.push_back(std::move(wqe));
  if (local != WcStatus::kSuccess) {
    fail_wqe(inflight_.back(), local);
    return false;
  }
  return true;
}

// Transmits from send_psn_ while the window allows, starting new WRs when everything already
// assigned a PSN has been sent.
void QueuePair::pump(TimeNs now, Effects& effects) {
  if (state_ != QpState::kRts || rnr_resume_ns_) return;
  for (;;) {
    if (psn_diff(send_psn_, next_psn_) >= 0) {
      if (!start_next_wqe(now)) return;
      continue;
    }
    if (psn_diff(send_psn_, psn_add(acked_psn_, 1)) >=
        static_cast<std::int32_t>(config_.max_inflight_packets)) {
      return;  // the window is full: wait for ACKs
    }
    SendWqe* wqe = find_wqe(send_psn_);
    if (wqe == nullptr) {
      // Retired while a resend was pending: continue with the next WR still in flight.
      std::uint32_t next = next_psn_;
      for (const SendWqe& later : inflight_) {
        if (psn_diff(later.first_psn, send_psn_) > 0) {
          next = later.first_psn;
          break;
        }
      }
      send_psn_ = next;
      continue;
    }
    if (wqe->complete) {
      send_psn_ = psn_add(last_psn(*wqe), 1);
      continue;
    }
    const auto index = static_cast<std::uint32_t>(psn_diff(send_psn_, wqe->first_psn));
    const bool resend = psn_diff(send_psn_, high_psn_) < 0;
    if (reads_or_atomic(*wqe)) {
      // One request covers the whole READ; resent, it asks only for what is missing.
      emit_request(*wqe, std::max(index, wqe->done_packets), effects);
      send_psn_ = psn_add(last_psn(*wqe), 1);
    } else {
      emit_request(*wqe, index, effects);
      send_psn_ = psn_add(send_psn_, 1);
    }
    if (resend) {
      ++node_.counters.retransmitted_packets;
    } else {
      ++node_.counters.request_packets;
    }
    if (psn_diff(send_psn_, high_psn_) > 0) high_psn_ = send_psn_;
  }
}

void QueuePair::emit_request(const SendWqe& wqe, std::uint32_t index, Effects& effects) {
  const SendWr& wr = wqe.wr;
  const std::uint64_t mtu = config_.path_mtu_bytes;
  const std::uint32_t psn = psn_add(wqe.first_psn, index);
  if (is_atomic_wr(wr)) {
    const Opcode opcode =
        wr.opcode == WrOpcode::kAtomicFetchAdd ? Opcode::kFetchAdd : Opcode::kCompareSwap;
    PacketFields f = fields(opcode, psn);
    f.virtual_address = wr.remote_addr;
    f.rkey = wr.rkey;
    f.swap_add = wr.opcode == WrOpcode::kAtomicFetchAdd ? wr.compare_add : wr.swap;
    f.compare = wr.opcode == WrOpcode::kAtomicFetchAdd ? 0 : wr.compare_add;
    emit(f, {}, effects);
    return;
  }
  if (is_read(wr)) {
    PacketFields f = fields(Opcode::kReadRequest, psn);
    const std::uint64_t offset = std::min<std::uint64_t>(index * mtu, wqe.bytes);
    f.virtual_address = wr.remote_addr + offset;
    f.rkey = wr.rkey;
    f.dma_length = static_cast<std::uint32_t>(wqe.bytes - offset);
    emit(f, {}, effects);
    return;
  }
  const std::uint64_t offset = index * mtu;
  const std::uint64_t length = std::min<std::uint64_t>(mtu, wqe.bytes - offset);
  const Opcode opcode = segment_opcode(wr, index, wqe.packets);
  PacketFields f = fields(opcode, psn);
  f.solicited = wr.solicited && is_last_or_only(opcode);
  f.ack_request = is_last_or_only(opcode) || (index + 1) % config_.ack_every_packets == 0;
  f.virtual_address = wr.remote_addr;
  f.rkey = wr.rkey;
  f.dma_length = static_cast<std::uint32_t>(wqe.bytes);
  f.imm = wr.imm_data;
  std::vector<std::byte>& scratch = node_.scratch;
  scratch.resize(length);
  // The buffers were checked when the WR started; a region deregistered since then reads as
  // zeros rather than touching freed memory (verbs leaves that case undefined).
  if (gather(wr.sg_list, offset, scratch) != WcStatus::kSuccess) {
    std::fill(scratch.begin(), scratch.end(), std::byte{0});
  }
  emit(f, scratch, effects);
}

void QueuePair::retransmit_from(std::uint32_t psn) {
  if (psn_diff(psn, send_psn_) < 0) send_psn_ = psn;
}

void QueuePair::progress(TimeNs now) {
  last_progress_ns_ = now;
  retries_left_ = config_.retry_count;
}

// Cumulative acknowledgement of every request packet up to `psn`: SEND and WRITE WRs it covers
// are done. A READ or atomic it covers whose response has not arrived lost that response
// (responses precede later ACKs on the wire), so it is requested again.
void QueuePair::ack_through(std::uint32_t psn, TimeNs now) {
  if (psn_diff(psn, acked_psn_) > 0 && psn_diff(psn, next_psn_) < 0) {
    acked_psn_ = psn;
    progress(now);
  }
  for (SendWqe& wqe : inflight_) {
    if (wqe.complete) continue;
    if (psn_diff(wqe.first_psn, psn) > 0) break;  // not covered
    if (reads_or_atomic(wqe)) {
      if (wqe.retried_at != static_cast<std::int64_t>(wqe.done_packets)) {
        wqe.retried_at = wqe.done_packets;
        ++node_.counters.implicit_retries;
        retransmit_from(resume_psn(wqe));
      }
      break;
    }
    if (psn_diff(last_psn(wqe), psn) > 0) break;  // partly acknowledged
    wqe.complete = true;
  }
  retire();
}

void QueuePair::on_ack(const PacketView& packet, TimeNs now, Effects& effects) {
  const std::uint32_t psn = packet.psn;
  if (psn_diff(psn, high_psn_) >= 0) {  // acknowledges something never sent
    ++node_.counters.stale_responses;
    return;
  }
  const std::uint8_t syndrome = packet.aeth->syndrome.value();
  switch (syndrome_kind(syndrome)) {
    case AethKind::kAck:
      // An old ACK still tells that READs/atomics it covers lost their responses.
      if (psn_diff(psn, acked_psn_) <= 0) ++node_.counters.stale_responses;
      ack_through(psn, now);
      break;
    case AethKind::kRnrNak: {
      ++node_.counters.rnr_naks_received;
      ack_through(psn_add(psn, -1), now);
      SendWqe* wqe = find_wqe(psn);
      if (wqe == nullptr || wqe->complete) return;
      if (config_.rnr_retry != 7) {  // 7: retry forever
        if (rnr_retries_left_ == 0) {
          fail_wqe(*wqe, WcStatus::kRnrRetryExceeded);
          return;
        }
        --rnr_retries_left_;
      }
      rnr_psn_ = psn;
      rnr_resume_ns_ = now + rnr_timer_ns(syndrome_value(syndrome));
      break;
    }
    case AethKind::kNak: {
      const std::uint8_t code = syndrome_value(syndrome);
      if (code == static_cast<std::uint8_t>(NakCode::kPsnSequenceError)) {
        ++node_.counters.seq_naks_received;
        ack_through(psn_add(psn, -1), now);
        SendWqe* wqe = find_wqe(psn);
        if (wqe == nullptr) return;
        if (retries_left_ == 0) {
          fail_wqe(*wqe, WcStatus::kRetryExceeded);
          return;
        }
        --retries_left_;
        retransmit_from(reads_or_atomic(*wqe) ? resume_psn(*wqe) : psn);
      } else {
        ++node_.counters.error_naks_received;
        ack_through(psn_add(psn, -1), now);
        SendWqe* wqe = find_wqe(psn);
        if (wqe == nullptr) {
          enter_error();
          return;
        }
        fail_wqe(*wqe, nak_status(code));
        return;
      }
      break;
    }
    default:
      ++node_.counters.stale_responses;  // reserved syndrome
      return;
  }
  pump(now, effects);
}

void QueuePair::on_read_response(const PacketView& packet, TimeNs now, Effects& effects) {
  SendWqe* wqe = find_wqe(packet.psn);
  if (wqe == nullptr || !is_read(wqe->wr) || wqe->complete) {
    ++node_.counters.stale_responses;
    return;
  }
  // A READ response acknowledges every earlier request (IBA 9.7.5.1.3).
  const std::uint32_t first = wqe->first_psn;
  ack_through(psn_add(first, -1), now);
  wqe = find_wqe(packet.psn);  // retire() may have moved the queue
  if (wqe == nullptr || state_ != QpState::kRts) return;
  if (&inflight_.front() != wqe) {  // an earlier READ/atomic is still missing its response
    ++node_.counters.stale_responses;
    pump(now, effects);
    return;
  }
  const std::uint32_t expected = psn_add(first, wqe->done_packets);
  const std::int32_t gap = psn_diff(packet.psn, expected);
  if (gap < 0) {
    ++node_.counters.stale_responses;
    return;
  }
  if (gap > 0) {  // a response was lost: ask again from the missing one (once per gap)
    ++node_.counters.stale_responses;
    if (wqe->retried_at != static_cast<std::int64_t>(wqe->done_packets)) {
      wqe->retried_at = wqe->done_packets;
      ++node_.counters.implicit_retries;
      retransmit_from(expected);
      pump(now, effects);
    }
    return;
  }
  // A READ re-requested from packet k is a new request to the responder, whose responses then
  // start again with FIRST (or ONLY): so check that LAST/ONLY ends the data exactly and every
  // other response carries one full MTU, not which of FIRST/MIDDLE it is.
  const std::uint32_t index = wqe->done_packets;
  const std::uint64_t mtu = config_.path_mtu_bytes;
  const bool final_packet = index + 1 == wqe->packets;
  const std::uint64_t want = final_packet ? wqe->bytes - index * mtu : mtu;
  if (is_last_or_only(packet.opcode) != final_packet || packet.payload.size() != want) {
    fail_wqe(*wqe, WcStatus::kBadResponse);
    return;
  }
  const WcStatus placed = scatter(wqe->wr.sg_list, index * mtu, packet.payload);
  if (placed != WcStatus::kSuccess) {
    fail_wqe(*wqe, placed);
    return;
  }
  ++wqe->done_packets;
  progress(now);
  if (wqe->done_packets == wqe->packets) {
    wqe->complete = true;
    if (psn_diff(last_psn(*wqe), acked_psn_) > 0) acked_psn_ = last_psn(*wqe);
    retire();
  }
  pump(now, effects);
}

void QueuePair::on_atomic_ack(const PacketView& packet, TimeNs now, Effects& effects) {
  SendWqe* wqe = find_wqe(packet.psn);
  if (wqe == nullptr || !is_atomic_wr(wqe->wr) || wqe->complete ||
      syndrome_kind(packet.aeth->syndrome.value()) != AethKind::kAck) {
    ++node_.counters.stale_responses;
    return;
  }
  ack_through(psn_add(packet.psn, -1), now);
  wqe = find_wqe(packet.psn);
  if (wqe == nullptr || state_ != QpState::kRts) return;
  if (&inflight_.front() != wqe) {  // an earlier READ/atomic is still missing its response
    ++node_.counters.stale_responses;
    pump(now, effects);
    return;
  }
  std::array<std::byte, 8> original;
  store_u64(original, *packet.atomic_original);
  const WcStatus placed = scatter(wqe->wr.sg_list, 0, original);
  if (placed != WcStatus::kSuccess) {
    fail_wqe(*wqe, placed);
    return;
  }
  wqe->done_packets = 1;
  wqe->complete = true;
  progress(now);
  if (psn_diff(packet.psn, acked_psn_) > 0) acked_psn_ = packet.psn;
  retire();
  pump(now, effects);
}

// Completes finished WRs from the front, in order (a later WR never completes before an
// earlier one, IBA 10.8.3.1).
void QueuePair::retire() {
  while (!inflight_.empty() && inflight_.front().complete) {
    const SendWqe& wqe = inflight_.front();
    if (reads_or_atomic(wqe) && inflight_reads_ > 0) --inflight_reads_;
    complete_send(wqe);
    inflight_.pop_front();
  }
}

void QueuePair::complete_send(const SendWqe& wqe) {
  if (wqe.status == WcStatus::kSuccess) ++node_.counters.send_completions;
  if (!wqe.wr.signaled && wqe.status == WcStatus::kSuccess) return;
  complete(send_cq_, WorkCompletion{.wr_id = wqe.wr.wr_id,
                                    .status = wqe.status,
                                    .opcode = wc_opcode(wqe.wr.opcode),
                                    .byte_len = static_cast<std::uint32_t>(wqe.bytes),
                                    .qp_num = qpn_});
}

void QueuePair::poll(TimeNs now, Effects& effects) {
  if (state_ != QpState::kRts) return;
  if (rnr_resume_ns_) {
    if (now < *rnr_resume_ns_) return;
    rnr_resume_ns_.reset();
    last_progress_ns_ = now;
    retransmit_from(rnr_psn_);
    pump(now, effects);
    return;
  }
  if (inflight_.empty() || now < last_progress_ns_ + config_.ack_timeout_ns) return;
  ++node_.counters.timeouts;
  SendWqe& oldest = inflight_.front();
  if (retries_left_ == 0) {
    fail_wqe(oldest, WcStatus::kRetryExceeded);
    return;
  }
  --retries_left_;
  last_progress_ns_ = now;
  // Go back N: everything from the oldest unacknowledged PSN is sent again.
  for (SendWqe& wqe : inflight_) wqe.retried_at = -1;
  retransmit_from(resume_psn(oldest));
  pump(now, effects);
}

std::optional<TimeNs> QueuePair::deadline() const {
  if (state_ != QpState::kRts) return std::nullopt;
  if (rnr_resume_ns_) return rnr_resume_ns_;
  if (inflight_.empty()) return std::nullopt;
  return last_progress_ns_ + config_.ack_timeout_ns;
}

}  // namespace ethx::roce
