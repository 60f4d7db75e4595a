#include "packet-engine/roce_qp.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace ethx::roce {
namespace {

bool is_read(const SendWr& wr) {
  return wr.opcode == WrOpcode::kRdmaRead;
}
bool is_atomic_wr(const SendWr& wr) {
  return wr.opcode == WrOpcode::kAtomicCompareSwap || wr.opcode == WrOpcode::kAtomicFetchAdd;
}
bool is_write_wr(const SendWr& wr) {
  return wr.opcode == WrOpcode::kRdmaWrite || wr.opcode == WrOpcode::kRdmaWriteWithImm;
}
bool has_imm(const SendWr& wr) {
  return wr.opcode == WrOpcode::kSendWithImm || wr.opcode == WrOpcode::kRdmaWriteWithImm;
}

std::uint64_t sg_bytes(const std::vector<Sge>& sg_list) {
  std::uint64_t total = 0;
  for (const Sge& sge : sg_list) total += sge.length;
  return total;
}

WcOpcode wc_opcode(WrOpcode opcode) {
  switch (opcode) {
    case WrOpcode::kSend:
    case WrOpcode::kSendWithImm:
      return WcOpcode::kSend;
    case WrOpcode::kRdmaWrite:
    case WrOpcode::kRdmaWriteWithImm:
      return WcOpcode::kRdmaWrite;
    case WrOpcode::kRdmaRead:
      return WcOpcode::kRdmaRead;
    case WrOpcode::kAtomicCompareSwap:
      return WcOpcode::kCompareSwap;
    case WrOpcode::kAtomicFetchAdd:
      return WcOpcode::kFetchAdd;
  }
  return WcOpcode::kSend;
}

// The opcode of packet `index` of `count` for a multi-packet SEND or WRITE.
Opcode segment_opcode(const SendWr& wr, std::uint32_t index, std::uint32_t count) {
  const bool first = index == 0;
  const bool last = index + 1 == count;
  const bool imm = has_imm(wr);
  if (is_write_wr(wr)) {
    if (first && last) return imm ? Opcode::kWriteOnlyImm : Opcode::kWriteOnly;
    if (first) return Opcode::kWriteFirst;
    if (last) return imm ? Opcode::kWriteLastImm : Opcode::kWriteLast;
    return Opcode::kWriteMiddle;
  }
  if (first && last) return imm ? Opcode::kSendOnlyImm : Opcode::kSendOnly;
  if (first) return Opcode::kSendFirst;
  if (last) return imm ? Opcode::kSendLastImm : Opcode::kSendLast;
  return Opcode::kSendMiddle;
}

Opcode read_response_opcode(std::uint32_t index, std::uint32_t count) {
  if (count == 1) return Opcode::kReadResponseOnly;
  if (index == 0) return Opcode::kReadResponseFirst;
  if (index + 1 == count) return Opcode::kReadResponseLast;
  return Opcode::kReadResponseMiddle;
}

WcStatus nak_status(std::uint8_t code) {
  switch (static_cast<NakCode>(code)) {
    case NakCode::kRemoteAccessError:
      return WcStatus::kRemoteAccessError;
    case NakCode::kInvalidRequest:
      return WcStatus::kRemoteInvalidRequest;
    default:
      return WcStatus::kRemoteOperationalError;
  }
}

// Atomic operands live in memory in host byte order (as with verbs on the host CPU); the
// wire carries them big-endian.
std::uint64_t load_u64(std::span<const std::byte> bytes) {
  std::uint64_t value = 0;
  std::memcpy(&value, bytes.data(), sizeof value);
  return value;
}
void store_u64(std::span<std::byte> bytes, std::uint64_t value) {
  std::memcpy(bytes.data(), &value, sizeof value);
}

}  // namespace

const char* to_string(QpState state) {
  switch (state) {
    case QpState::kReset:
      return "reset";
    case QpState::kRts:
      return "rts";
    case QpState::kError:
      return "error";
  }
  return "unknown";
}

const char* to_string(WcStatus status) {
  switch (status) {
    case WcStatus::kSuccess:
      return "success";
    case WcStatus::kLocalLengthError:
      return "local-length-error";
    case WcStatus::kLocalProtectionError:
      return "local-protection-error";
    case WcStatus::kWrFlushError:
      return "wr-flush-error";
    case WcStatus::kRemoteAccessError:
      return "remote-access-error";
    case WcStatus::kRemoteInvalidRequest:
      return "remote-invalid-request";
    case WcStatus::kRemoteOperationalError:
      return "remote-operational-error";
    case WcStatus::kRetryExceeded:
      return "retry-exceeded";
    case WcStatus::kRnrRetryExceeded:
      return "rnr-retry-exceeded";
    case WcStatus::kBadResponse:
      return "bad-response";
  }
  return "unknown";
}

QueuePair::QueuePair(QpNum qpn, const QpConfig& config, NodeContext& node, CompletionQueue& send_cq,
                     CompletionQueue& recv_cq)
    : qpn_(qpn & kPsnMask),
      config_(config),
      node_(node),
      send_cq_(send_cq),
      recv_cq_(recv_cq),
      atomic_replay_(std::max<std::uint32_t>(config.atomic_replay_entries, 1)) {
  if (!valid_path_mtu(config_.path_mtu_bytes))
    config_.path_mtu_bytes = 1024;  // RoceNode refuses these
  config_.max_inflight_packets = std::max<std::uint32_t>(config_.max_inflight_packets, 1);
  config_.max_rd_atomic = std::max<std::uint32_t>(config_.max_rd_atomic, 1);
  // An AckReq at least once per window, or a full window would wait for the ACK timeout.
  config_.ack_every_packets =
      std::clamp<std::uint32_t>(config_.ack_every_packets, 1, config_.max_inflight_packets);
}

bool QueuePair::connect(const QpRemote& remote) {
  if (state_ != QpState::kReset) return false;
  remote_ = remote;
  remote_.qpn &= kPsnMask;
  next_psn_ = send_psn_ = high_psn_ = config_.initial_psn & kPsnMask;
  acked_psn_ = psn_add(next_psn_, -1);
  epsn_ = remote.initial_psn & kPsnMask;
  retries_left_ = config_.retry_count;
  rnr_retries_left_ = config_.rnr_retry;
  state_ = QpState::kRts;
  return true;
}

// ---- posting ---------------------------------------------------------------------------------

PostResult QueuePair::post_send(const SendWr& wr) {
  if (state_ == QpState::kReset) return PostResult::kQpNotReady;
  if (wr.sg_list.size() > config_.max_sge) return PostResult::kTooManySge;
  if (posted_.size() + pending_.size() + inflight_.size() >= config_.max_send_wr) {
    return PostResult::kQueueFull;
  }
  ++node_.counters.wqes_posted;
  if (state_ == QpState::kError) {
    complete(send_cq_, WorkCompletion{.wr_id = wr.wr_id,
                                      .status = WcStatus::kWrFlushError,
                                      .opcode = wc_opcode(wr.opcode),
                                      .qp_num = qpn_});
    return PostResult::kOk;
  }
  posted_.push_back(wr);
  return PostResult::kOk;
}

PostResult QueuePair::post_recv(const RecvWr& wr) {
  if (state_ == QpState::kReset) return PostResult::kQpNotReady;
  if (wr.sg_list.size() > config_.max_sge) return PostResult::kTooManySge;
  if (recv_queue_.size() >= config_.max_recv_wr) return PostResult::kQueueFull;
  if (state_ == QpState::kError) {
    complete(recv_cq_, WorkCompletion{.wr_id = wr.wr_id,
                                      .status = WcStatus::kWrFlushError,
                                      .opcode = WcOpcode::kRecv,
                                      .qp_num = qpn_});
    return PostResult::kOk;
  }
  recv_queue_.push_back(wr);
  return PostResult::kOk;
}

void QueuePair::doorbell(TimeNs now, Effects& effects) {
  ++node_.counters.doorbells;
  while (!posted_.empty()) {
    pending_.push_back(std::move(posted_.front()));
    posted_.pop_front();
  }
  pump(now, effects);
}

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
  scratch_.resize(length);
  // The buffers were checked when the WR started; a region deregistered since then reads as
  // zeros rather than touching freed memory (verbs leaves that case undefined).
  if (gather(wr.sg_list, offset, scratch_) != WcStatus::kSuccess) {
    std::fill(scratch_.begin(), scratch_.end(), std::byte{0});
  }
  emit(f, scratch_, effects);
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
  wqe = find_wqe(packet.psn);  // retire() may have moved the deque
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

void QueuePair::complete(CompletionQueue& cq, const WorkCompletion& completion) {
  if (completion.status != WcStatus::kSuccess) ++node_.counters.error_completions;
  if (!cq.push(completion)) ++node_.counters.cq_overflows;
}

// The WR fails with `status`; everything before it is complete; the QP enters the error state.
// Earlier WRs still waiting for a response are flushed by enter_error().
void QueuePair::fail_wqe(SendWqe& wqe, WcStatus status) {
  wqe.status = status;
  wqe.complete = true;
  retire();
  enter_error();
}

// IBA 10.3.1: in the error state every outstanding and later WR completes with a flush error.
void QueuePair::enter_error() {
  if (state_ == QpState::kError) return;
  state_ = QpState::kError;
  rnr_resume_ns_.reset();
  for (SendWqe& wqe : inflight_) {
    if (!wqe.complete) wqe.status = WcStatus::kWrFlushError;
    wqe.complete = true;
  }
  retire();
  for (auto* queue : {&pending_, &posted_}) {
    for (const SendWr& wr : *queue) {
      complete(send_cq_, WorkCompletion{.wr_id = wr.wr_id,
                                        .status = WcStatus::kWrFlushError,
                                        .opcode = wc_opcode(wr.opcode),
                                        .qp_num = qpn_});
    }
    queue->clear();
  }
  for (const RecvWr& wr : recv_queue_) {
    complete(recv_cq_, WorkCompletion{.wr_id = wr.wr_id,
                                      .status = WcStatus::kWrFlushError,
                                      .opcode = WcOpcode::kRecv,
                                      .qp_num = qpn_});
  }
  recv_queue_.clear();
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

// ---- responder -------------------------------------------------------------------------------

void QueuePair::on_packet(const PacketView& packet, TimeNs now, Effects& effects) {
  if (state_ != QpState::kRts) {
    ++node_.counters.dropped_in_error;
    return;
  }
  switch (packet.opcode) {
    case Opcode::kAcknowledge:
      on_ack(packet, now, effects);
      return;
    case Opcode::kAtomicAcknowledge:
      on_atomic_ack(packet, now, effects);
      return;
    case Opcode::kReadResponseFirst:
    case Opcode::kReadResponseMiddle:
    case Opcode::kReadResponseLast:
    case Opcode::kReadResponseOnly:
      on_read_response(packet, now, effects);
      return;
    default:
      on_request(packet, now, effects);
      return;
  }
}

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

// ---- shared ----------------------------------------------------------------------------------

PacketFields QueuePair::fields(Opcode opcode, std::uint32_t psn) const {
  PacketFields f;
  f.opcode = opcode;
  f.pkey = node_.pkey;
  f.dest_qp = remote_.qpn;
  f.psn = psn;
  return f;
}

void QueuePair::emit(const PacketFields& f, std::span<const std::byte> payload, Effects& effects) {
  PacketAddress address;
  address.dst_mac = remote_.mac;
  address.src_mac = node_.mac;
  address.src_ip = node_.ip;
  address.dst_ip = remote_.ip;
  address.dscp = node_.dscp;
  address.ecn = node_.ecn;
  address.ttl = node_.ttl;
  address.identification = node_.next_ip_id++;
  // RoCEv2 puts flow entropy in the UDP source port (Annex A17.2.3); one port per QP keeps a
  // connection on one ECMP path, so its packets stay in order.
  address.udp_src_port = static_cast<std::uint16_t>(0xC000 | (qpn_ & 0x3FFF));
  effects.send.push_back(encode_packet(address, f, payload));
  ++node_.counters.frames_tx;
  node_.counters.bytes_tx += effects.send.back().size();
}

WcStatus QueuePair::scatter(const std::vector<Sge>& sg_list, std::uint64_t offset,
                            std::span<const std::byte> data) const {
  std::size_t done = 0;
  for (const Sge& sge : sg_list) {
    if (done == data.size()) break;
    if (offset >= sge.length) {
      offset -= sge.length;
      continue;
    }
    const std::uint64_t take = std::min<std::uint64_t>(sge.length - offset, data.size() - done);
    std::span<std::byte> target;
    if (node_.memory.check_local(Sge{sge.addr + offset, static_cast<std::uint32_t>(take), sge.lkey},
                                 true, target) != KeyCheck::kOk) {
      return WcStatus::kLocalProtectionError;
    }
    std::memcpy(target.data(), data.data() + done, take);
    done += take;
    offset = 0;
  }
  return done == data.size() ? WcStatus::kSuccess : WcStatus::kLocalLengthError;
}

WcStatus QueuePair::gather(const std::vector<Sge>& sg_list, std::uint64_t offset,
                           std::span<std::byte> out) const {
  std::size_t done = 0;
  for (const Sge& sge : sg_list) {
    if (done == out.size()) break;
    if (offset >= sge.length) {
      offset -= sge.length;
      continue;
    }
    const std::uint64_t take = std::min<std::uint64_t>(sge.length - offset, out.size() - done);
    std::span<std::byte> source;
    if (node_.memory.check_local(Sge{sge.addr + offset, static_cast<std::uint32_t>(take), sge.lkey},
                                 false, source) != KeyCheck::kOk) {
      return WcStatus::kLocalProtectionError;
    }
    std::memcpy(out.data() + done, source.data(), take);
    done += take;
    offset = 0;
  }
  return done == out.size() ? WcStatus::kSuccess : WcStatus::kLocalLengthError;
}

std::size_t QueuePair::state_bytes() const {
  std::size_t bytes =
      sizeof(*this) + atomic_replay_.capacity() * sizeof(AtomicReplay) + scratch_.capacity();
  auto wr_bytes = [](const auto& wr) { return wr.sg_list.capacity() * sizeof(Sge); };
  for (const SendWr& wr : posted_) bytes += sizeof(SendWr) + wr_bytes(wr);
  for (const SendWr& wr : pending_) bytes += sizeof(SendWr) + wr_bytes(wr);
  for (const SendWqe& wqe : inflight_) bytes += sizeof(SendWqe) + wr_bytes(wqe.wr);
  for (const RecvWr& wr : recv_queue_) bytes += sizeof(RecvWr) + wr_bytes(wr);
  return bytes;
}

}  // namespace ethx::roce
