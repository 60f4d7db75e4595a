#include "packet-engine/requester.hpp"

#include <algorithm>
#include <cstring>

namespace ethx {
namespace {

constexpr unsigned kTagIndexBits = 12;
constexpr std::uint16_t kTagIndexMask = (1u << kTagIndexBits) - 1;
// Liveness probes carry this tag; no slot has its index (kMaxOutstandingLimit < 0xFFF + 1).
constexpr std::uint16_t kProbeTag = kTagIndexMask;
static_assert(kMaxOutstandingLimit <= kProbeTag);

std::uint16_t make_tag(std::uint16_t index, std::uint8_t generation) {
  return static_cast<std::uint16_t>((generation & 0xF) << kTagIndexBits | index);
}

wire::Opcode atomic_opcode(AtomicOp op) {
  switch (op) {
    case AtomicOp::kFetchAdd:
      return wire::Opcode::kAtomicFetchAdd;
    case AtomicOp::kSwap:
      return wire::Opcode::kAtomicSwap;
    case AtomicOp::kCompareSwap:
      return wire::Opcode::kAtomicCas;
  }
  return wire::Opcode::kAtomicFetchAdd;
}

}  // namespace

Requester::Requester(const EngineConfig& config, TxFramer& framer)
    : config_(config),
      framer_(framer),
      liveness_(config.gpu_macs.size()),
      peer_flags_(config.gpu_macs.size(), 0) {
  const std::uint32_t slots =
      std::clamp<std::uint32_t>(config.max_outstanding, 1, kMaxOutstandingLimit);
  slots_.resize(slots);
  for (std::uint16_t i = 0; i < slots; ++i) free_tags_.push_back(i);
}

std::size_t Requester::tags_needed(std::uint64_t bytes) const {
  const std::size_t chunk = framer_.max_payload();
  return bytes == 0 ? 1 : static_cast<std::size_t>((bytes + chunk - 1) / chunk);
}

Requester::OpIndex Requester::begin_op(OpKind kind, GpuId dst, std::uint64_t address, TimeNs now) {
  OpIndex index = 0;
  if (free_ops_.empty()) {
    index = static_cast<OpIndex>(ops_.size());
    ops_.emplace_back();
  } else {
    index = free_ops_.back();
    free_ops_.pop_back();
  }
  PendingOp& op = ops_[index];
  op.fragments_left = 0;
  op.completion = Completion{};
  op.completion.id = next_op_++;
  op.completion.kind = kind;
  op.completion.dst_gpu = dst;
  op.completion.address = address;
  op.completion.issued_ns = now;
  ++counters_.ops_issued;
  return index;
}

void Requester::complete(OpIndex op, TimeNs now) {
  // Moved straight into its place in the queue: one move, not two.
  Completion& completion = completions_.append();
  completion = std::move(ops_[op].completion);
  free_ops_.push_back(op);
  completion.completed_ns = now;
  if (completion.ok()) {
    ++counters_.ops_completed;
  } else {
    ++counters_.ops_failed;
    completion.data.clear();
  }
}

void Requester::fail_now(OpIndex op, wire::Status status, std::uint64_t fault_addr, TimeNs now) {
  Completion& completion = ops_[op].completion;
  completion.status = status;
  completion.fault_addr = fault_addr;
  complete(op, now);
}

std::uint16_t Requester::take_tag(OpIndex op, GpuId dst, wire::Opcode expected,
                                  std::uint64_t address, std::uint32_t length,
                                  std::uint32_t data_offset, TimeNs now) {
  const std::uint16_t index = free_tags_.front();
  free_tags_.pop_front();
  TagSlot& slot = slots_[index];
  slot.busy = true;
  slot.generation = static_cast<std::uint8_t>((slot.generation + 1) & 0xF);
  slot.op = op;
  slot.dst = dst;
  slot.expected = expected;
  slot.address = address;
  slot.length = length;
  slot.data_offset = data_offset;
  slot.deadline_ns = now + config_.request_timeout_ns;
  const std::uint16_t tag = make_tag(index, slot.generation);
  deadlines_.push_back(Deadline{slot.deadline_ns, tag});
  ++ops_[op].fragments_left;
  return tag;
}

OpId Requester::read(GpuId dst, std::uint64_t address, std::uint32_t length, TimeNs now,
                     Effects& effects) {
  const OpIndex index = begin_op(OpKind::kRead, dst, address, now);
  const OpId id = ops_[index].completion.id;
  if (fail_if_unreachable(index, dst, address, now)) return id;
  if (length == 0) {
    fail_now(index, wire::Status::kBadRequest, address, now);
    return id;
  }
  if (tags_needed(length) > free_tags_.size()) {
    ++counters_.busy_rejects;
    fail_now(index, wire::Status::kBusy, address, now);
    return id;
  }
  ops_[index].completion.data.resize(length);
  const std::size_t chunk = framer_.max_payload();
  for (std::uint32_t offset = 0; offset < length;) {
    const auto piece = static_cast<std::uint32_t>(std::min<std::size_t>(chunk, length - offset));
    const std::uint16_t tag =
        take_tag(index, dst, wire::Opcode::kReadResp, address + offset, piece, offset, now);
    framer_.append(dst,
                   wire::TxnFields{wire::Opcode::kReadReq, wire::Status::kOk, tag,
                                   static_cast<std::uint16_t>(piece), address + offset},
                   0, true, now, effects);
    offset += piece;
  }
  return id;
}

OpId Requester::write(GpuId dst, std::uint64_t address, std::span<const std::byte> data, TimeNs now,
                      Effects& effects) {
  const OpIndex index = begin_op(OpKind::kWrite, dst, address, now);
  const OpId id = ops_[index].completion.id;
  if (fail_if_unreachable(index, dst, address, now)) return id;
  if (data.empty()) {
    fail_now(index, wire::Status::kBadRequest, address, now);
    return id;
  }
  if (tags_needed(data.size()) > free_tags_.size()) {
    ++counters_.busy_rejects;
    fail_now(index, wire::Status::kBusy, address, now);
    return id;
  }
  const std::size_t chunk = framer_.max_payload();
  for (std::size_t offset = 0; offset < data.size();) {
    const std::size_t piece = std::min(chunk, data.size() - offset);
    const std::uint16_t tag =
        take_tag(index, dst, wire::Opcode::kWriteAck, address + offset,
                 static_cast<std::uint32_t>(piece), static_cast<std::uint32_t>(offset), now);
    auto payload =
        framer_.append(dst,
                       wire::TxnFields{wire::Opcode::kWriteReq, wire::Status::kOk, tag,
                                       static_cast<std::uint16_t>(piece), address + offset},
                       piece, true, now, effects);
    std::memcpy(payload.data(), data.data() + offset, piece);
    offset += piece;
  }
  return id;
}

bool Requester::write_posted(GpuId dst, std::uint64_t address, std::span<const std::byte> data,
                             TimeNs now, Effects& effects) {
  if (!dst_known(dst) || data.empty()) return false;
  if (peer_down(dst)) {
    ++counters_.posted_writes_dropped;
    return false;
  }
  ++counters_.posted_writes;
  counters_.posted_bytes += data.size();
  if (framer_.try_extend_posted_write(dst, address, data)) {
    ++counters_.writes_combined;
    return true;
  }
  const std::size_t chunk = framer_.max_payload();
  for (std::size_t offset = 0; offset < data.size();) {
    const std::size_t piece = std::min(chunk, data.size() - offset);
    auto payload =
        framer_.append(dst,
                       wire::TxnFields{wire::Opcode::kWritePosted, wire::Status::kOk, 0,
                                       static_cast<std::uint16_t>(piece), address + offset},
                       piece, false, now, effects);
    std::memcpy(payload.data(), data.data() + offset, piece);
    offset += piece;
  }
  return true;
}

OpId Requester::atomic(GpuId dst, std::uint64_t address, AtomicOp op, std::uint8_t width_bytes,
                       std::uint64_t operand, std::uint64_t compare, TimeNs now, Effects& effects) {
  const OpIndex index = begin_op(OpKind::kAtomic, dst, address, now);
  const OpId id = ops_[index].completion.id;
  if (fail_if_unreachable(index, dst, address, now)) return id;
  if (width_bytes != 4 && width_bytes != 8) {
    fail_now(index, wire::Status::kBadRequest, address, now);
    return id;
  }
  if (free_tags_.empty()) {
    ++counters_.busy_rejects;
    fail_now(index, wire::Status::kBusy, address, now);
    return id;
  }
  const wire::Opcode opcode = atomic_opcode(op);
  const std::uint16_t tag =
      take_tag(index, dst, wire::Opcode::kAtomicResp, address, width_bytes, 0, now);
  auto payload =
      framer_.append(dst, wire::TxnFields{opcode, wire::Status::kOk, tag, width_bytes, address},
                     wire::request_payload_bytes(opcode, width_bytes), true, now, effects);
  if (op == AtomicOp::kCompareSwap) {
    wire::put_operand(payload.first(width_bytes), compare);
    wire::put_operand(payload.subspan(width_bytes), operand);
  } else {
    wire::put_operand(payload, operand);
  }
  return id;
}

OpId Requester::flush(GpuId dst, TimeNs now, Effects& effects) {
  const OpIndex index = begin_op(OpKind::kFlush, dst, 0, now);
  const OpId id = ops_[index].completion.id;
  if (fail_if_unreachable(index, dst, 0, now)) return id;
  if (free_tags_.empty()) {
    ++counters_.busy_rejects;
    fail_now(index, wire::Status::kBusy, 0, now);
    return id;
  }
  const std::uint16_t tag = take_tag(index, dst, wire::Opcode::kFlushResp, 0, 0, 0, now);
  framer_.append(dst, wire::TxnFields{wire::Opcode::kFlushReq, wire::Status::kOk, tag, 0, 0}, 0,
                 true, now, effects);
  return id;
}

bool Requester::fail_if_unreachable(OpIndex op, GpuId dst, std::uint64_t address, TimeNs now) {
  if (dst_known(dst) && !peer_down(dst)) return false;
  if (dst_known(dst)) ++counters_.ops_fast_failed;
  fail_now(op, wire::Status::kUnreachable, address, now);
  return true;
}

void Requester::on_response(GpuId src, const wire::TxnView& txn, TimeNs now) {
  if (txn.tag == kProbeTag) {
    // Any answer will do (a flush response, or an error): the frame that carried it has
    // already marked the peer up through on_peer_frame().
    ++counters_.probes_answered;
    return;
  }
  const std::uint16_t index = txn.tag & kTagIndexMask;
  const auto generation = static_cast<std::uint8_t>(txn.tag >> kTagIndexBits);
  if (index >= slots_.size()) {
    ++counters_.stale_responses;
    return;
  }
  TagSlot& slot = slots_[index];
  if (!slot.busy || slot.generation != generation || slot.dst != src) {
    ++counters_.stale_responses;
    return;
  }
  if (txn.opcode == wire::Opcode::kErrorResp) {
    resolve_fragment(index, txn.status, txn.address, now);
    return;
  }
  const bool length_ok = txn.opcode == slot.expected &&
                         (txn.opcode != wire::Opcode::kReadResp || txn.length == slot.length) &&
                         (txn.opcode != wire::Opcode::kAtomicResp || txn.length == slot.length);
  if (!length_ok) {
    ++counters_.bad_responses;
    resolve_fragment(index, wire::Status::kBadRequest, slot.address, now);
    return;
  }
  PendingOp& op = ops_[slot.op];
  if (txn.opcode == wire::Opcode::kReadResp) {
    std::memcpy(op.completion.data.data() + slot.data_offset, txn.payload.data(),
                txn.payload.size());
  } else if (txn.opcode == wire::Opcode::kAtomicResp) {
    op.completion.old_value = wire::get_operand(txn.payload);
  }
  resolve_fragment(index, wire::Status::kOk, 0, now);
}

void Requester::resolve_fragment(std::uint16_t index, wire::Status status, std::uint64_t fault_addr,
                                 TimeNs now) {
  TagSlot& slot = slots_[index];
  slot.busy = false;
  free_tags_.push_back(index);
  PendingOp& op = ops_[slot.op];
  // The first failing fragment decides the op's status and fault address.
  if (status != wire::Status::kOk && op.completion.status == wire::Status::kOk) {
    op.completion.status = status;
    op.completion.fault_addr = fault_addr;
  }
  if (--op.fragments_left > 0) return;
  complete(slot.op, now);
}

void Requester::poll(TimeNs now, Effects& effects) {
  while (!deadlines_.empty()) {
    const Deadline next = deadlines_.front();
    const std::uint16_t index = next.tag & kTagIndexMask;
    const auto generation = static_cast<std::uint8_t>(next.tag >> kTagIndexBits);
    const TagSlot& slot = slots_[index];
    // The deadline check matters once a slot's 4-bit generation has wrapped.
    const bool still_waiting =
        slot.busy && slot.generation == generation && slot.deadline_ns == next.at_ns;
    if (!still_waiting) {
      deadlines_.pop_front();  // answered already
      continue;
    }
    if (next.at_ns > now) {
      effects.wake_no_later_than(next.at_ns);
      break;
    }
    deadlines_.pop_front();
    ++counters_.timeouts;
    note_timeout(slot.dst, now);
    resolve_fragment(index, wire::Status::kTimeout, slot.address, now);
  }
  if (!down_peers_.empty()) probe_down_peers(now, effects);
}

void Requester::on_peer_frame(GpuId src) {
  // Nothing to reset, the usual case: the peer is up and no timeout is counted against it.
  if (!dst_known(src) || peer_flags_[src] == 0) return;
  liveness_[src].timeouts_in_row = 0;
  const bool was_down = (peer_flags_[src] & kPeerDown) != 0;
  peer_flags_[src] = 0;
  if (!was_down) return;
  ++counters_.peers_marked_up;
  ++liveness_transitions_;
  down_peers_.erase(std::find(down_peers_.begin(), down_peers_.end(), src));
}

void Requester::note_timeout(GpuId dst, TimeNs now) {
  const std::uint32_t limit = config_.liveness.down_after_timeouts;
  PeerLiveness& peer = liveness_[dst];
  if (limit == 0 || peer_down(dst)) return;
  if (peer.timeouts_in_row == 0 ||
      now - peer.first_timeout_ns > config_.liveness.timeout_window_ns) {
    peer.timeouts_in_row = 0;
    peer.first_timeout_ns = now;
  }
  peer_flags_[dst] |= kPeerTimedOut;
  if (++peer.timeouts_in_row < limit) return;
  peer_flags_[dst] |= kPeerDown;
  peer.next_probe_ns = now + config_.liveness.probe_interval_ns;
  ++counters_.peers_marked_down;
  ++liveness_transitions_;
  down_peers_.push_back(dst);
}

void Requester::probe_down_peers(TimeNs now, Effects& effects) {
  for (const GpuId dst : down_peers_) {
    PeerLiveness& peer = liveness_[dst];
    if (now >= peer.next_probe_ns) {
      // A flush has no side effect on the peer and is always answered.
      framer_.append(dst,
                     wire::TxnFields{wire::Opcode::kFlushReq, wire::Status::kOk, kProbeTag, 0, 0},
                     0, true, now, effects);
      ++counters_.probes_sent;
      peer.next_probe_ns = now + config_.liveness.probe_interval_ns;
    }
    effects.wake_no_later_than(peer.next_probe_ns);
  }
}

std::optional<Completion> Requester::take_completion() {
  if (completions_.empty()) return std::nullopt;
  Completion completion = std::move(completions_.front());
  completions_.pop_front();
  return completion;
}

}  // namespace ethx
