#include "packet-engine/roce/roce_qp.hpp"

#include <algorithm>
#include <cstring>

#include "packet-engine/roce/roce_qp_internal.hpp"

namespace ethx::roce {

using namespace detail;

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
    : qpn_(qpn & kPsnMask), config_(config), node_(node), send_cq_(send_cq), recv_cq_(recv_cq) {
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

// ---- dispatch ----------------------------------------------------------------------------------

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
  effects.send.push_back(encode_packet(address, f, payload, effects.take_spare(), node_.icrc));
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
  // The replay entries count whether or not an atomic has allocated them yet: a NIC keeps them
  // in the QP's context.
  std::size_t bytes = sizeof(*this) + std::max<std::size_t>(config_.atomic_replay_entries, 1) *
                                          sizeof(AtomicReplay);
  auto wr_bytes = [](const auto& wr) { return wr.sg_list.capacity() * sizeof(Sge); };
  for (const SendWr& wr : posted_) bytes += sizeof(SendWr) + wr_bytes(wr);
  for (const SendWr& wr : pending_) bytes += sizeof(SendWr) + wr_bytes(wr);
  for (const SendWqe& wqe : inflight_) bytes += sizeof(SendWqe) + wr_bytes(wqe.wr);
  for (const RecvWr& wr : recv_queue_) bytes += sizeof(RecvWr) + wr_bytes(wr);
  return bytes;
}

}  // namespace ethx::roce
