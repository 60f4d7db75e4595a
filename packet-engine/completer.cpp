#include "packet-engine/completer.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace ethx {
namespace {

// Atomics act on the memory in place through std::atomic_ref, so a local access by the GPU
// that owns the memory (another thread or process mapping the same file) never tears them.
template <class T>
T apply_atomic(std::byte* where, wire::Opcode opcode, T operand, T expected) {
  std::atomic_ref<T> cell(*reinterpret_cast<T*>(where));
  switch (opcode) {
    case wire::Opcode::kAtomicFetchAdd:
      return cell.fetch_add(operand);
    case wire::Opcode::kAtomicSwap:
      return cell.exchange(operand);
    default:
      cell.compare_exchange_strong(expected, operand);
      return expected;  // holds the old value whether or not the swap happened
  }
}

}  // namespace

Completer::Completer(const EngineConfig& config, TxFramer& framer, std::span<std::byte> memory)
    : config_(config), framer_(framer), memory_(memory) {}

wire::Status Completer::check(const wire::FrameView& frame, const wire::TxnView& txn) const {
  if (frame.partition != config_.partition) return wire::Status::kPartition;
  if (frame.src_gpu >= config_.gpu_macs.size()) return wire::Status::kBadRequest;
  Access access = Access::kWrite;
  std::uint64_t length = txn.length;
  switch (txn.opcode) {
    case wire::Opcode::kReadReq:
      access = Access::kRead;
      // The response must fit in one frame.
      if (length > framer_.max_payload()) return wire::Status::kBadRequest;
      break;
    case wire::Opcode::kAtomicFetchAdd:
    case wire::Opcode::kAtomicSwap:
    case wire::Opcode::kAtomicCas:
      access = Access::kAtomic;
      if (txn.address % length != 0) return wire::Status::kBadRequest;  // atomics need alignment
      break;
    case wire::Opcode::kFlushReq:
      return wire::Status::kOk;
    default:
      break;
  }
  if ((config_.export_rights & right_needed(access)) == 0) return wire::Status::kNoRights;
  if (txn.address > memory_.size() || length > memory_.size() - txn.address) {
    return wire::Status::kOutOfRange;
  }
  return wire::Status::kOk;
}

void Completer::respond_error(GpuId requester, const wire::TxnView& txn, wire::Status status,
                              TimeNs now, Effects& effects) {
  ++counters_.errors;
  ++counters_
        .errors_by_status[static_cast<std::size_t>(status) % counters_.errors_by_status.size()];
  // The address names the first failing byte: for a range that starts inside memory and runs
  // past its end, that is the first byte past the end, not the start of the request.
  const std::uint64_t fault_addr = status == wire::Status::kOutOfRange
                                       ? std::max<std::uint64_t>(txn.address, memory_.size())
                                       : txn.address;
  framer_.append(requester,
                 wire::TxnFields{wire::Opcode::kErrorResp, status, txn.tag, txn.length, fault_addr},
                 0, true, now, effects);
}

std::uint64_t Completer::perform_atomic(const wire::TxnView& txn) {
  std::byte* where = memory_.data() + txn.address;
  const std::size_t width = txn.length;
  const bool cas = txn.opcode == wire::Opcode::kAtomicCas;
  const std::uint64_t expected = cas ? wire::get_operand(txn.payload.first(width)) : 0;
  const std::uint64_t operand = wire::get_operand(cas ? txn.payload.subspan(width) : txn.payload);
  if (width == 4) {
    return apply_atomic<std::uint32_t>(where, txn.opcode, static_cast<std::uint32_t>(operand),
                                       static_cast<std::uint32_t>(expected));
  }
  return apply_atomic<std::uint64_t>(where, txn.opcode, operand, expected);
}

void Completer::on_request(const wire::FrameView& frame, const wire::TxnView& txn, TimeNs now,
                           Effects& effects) {
  const GpuId requester = frame.src_gpu;
  const wire::Status status = check(frame, txn);
  if (status != wire::Status::kOk) {
    if (txn.opcode == wire::Opcode::kWritePosted) {
      // Nobody waits for a posted write: count it so the loss is visible, never silent.
      ++counters_.posted_write_errors;
      ++counters_.errors_by_status[static_cast<std::size_t>(status)];
      return;
    }
    if (requester < config_.gpu_macs.size()) respond_error(requester, txn, status, now, effects);
    return;
  }
  switch (txn.opcode) {
    case wire::Opcode::kReadReq: {
      ++counters_.reads;
      counters_.read_bytes += txn.length;
      auto payload = framer_.append(requester,
                                    wire::TxnFields{wire::Opcode::kReadResp, wire::Status::kOk,
                                                    txn.tag, txn.length, txn.address},
                                    txn.length, true, now, effects);
      std::memcpy(payload.data(), memory_.data() + txn.address, txn.length);
      break;
    }
    case wire::Opcode::kWritePosted:
    case wire::Opcode::kWriteReq:
      ++counters_.writes;
      counters_.write_bytes += txn.length;
      std::memcpy(memory_.data() + txn.address, txn.payload.data(), txn.length);
      if (txn.opcode == wire::Opcode::kWriteReq) {
        framer_.append(requester,
                       wire::TxnFields{wire::Opcode::kWriteAck, wire::Status::kOk, txn.tag,
                                       txn.length, txn.address},
                       0, true, now, effects);
      }
      break;
    case wire::Opcode::kAtomicFetchAdd:
    case wire::Opcode::kAtomicSwap:
    case wire::Opcode::kAtomicCas: {
      ++counters_.atomics;
      const std::uint64_t old_value = perform_atomic(txn);
      auto payload = framer_.append(requester,
                                    wire::TxnFields{wire::Opcode::kAtomicResp, wire::Status::kOk,
                                                    txn.tag, txn.length, txn.address},
                                    txn.length, true, now, effects);
      wire::put_operand(payload, old_value);
      break;
    }
    case wire::Opcode::kFlushReq:
      // Every earlier write from this requester arrived first and is already performed.
      ++counters_.flushes;
      framer_.append(requester,
                     wire::TxnFields{wire::Opcode::kFlushResp, wire::Status::kOk, txn.tag, 0, 0}, 0,
                     true, now, effects);
      break;
    default:
      break;  // responses never reach the completer (the endpoint routes them)
  }
}

}  // namespace ethx
