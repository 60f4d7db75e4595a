// Helpers the queue pair's requester, responder and shared parts use (roce_qp*.cpp only).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "packet-engine/roce/roce_verbs.hpp"
#include "packet-engine/roce/roce_wire.hpp"

namespace ethx::roce::detail {

inline bool is_read(const SendWr& wr) {
  return wr.opcode == WrOpcode::kRdmaRead;
}
inline bool is_atomic_wr(const SendWr& wr) {
  return wr.opcode == WrOpcode::kAtomicCompareSwap || wr.opcode == WrOpcode::kAtomicFetchAdd;
}
inline bool is_write_wr(const SendWr& wr) {
  return wr.opcode == WrOpcode::kRdmaWrite || wr.opcode == WrOpcode::kRdmaWriteWithImm;
}
inline bool has_imm(const SendWr& wr) {
  return wr.opcode == WrOpcode::kSendWithImm || wr.opcode == WrOpcode::kRdmaWriteWithImm;
}

inline std::uint64_t sg_bytes(const std::vector<Sge>& sg_list) {
  std::uint64_t total = 0;
  for (const Sge& sge : sg_list) total += sge.length;
  return total;
}

inline WcOpcode wc_opcode(WrOpcode opcode) {
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
inline Opcode segment_opcode(const SendWr& wr, std::uint32_t index, std::uint32_t count) {
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

inline Opcode read_response_opcode(std::uint32_t index, std::uint32_t count) {
  if (count == 1) return Opcode::kReadResponseOnly;
  if (index == 0) return Opcode::kReadResponseFirst;
  if (index + 1 == count) return Opcode::kReadResponseLast;
  return Opcode::kReadResponseMiddle;
}

inline WcStatus nak_status(std::uint8_t code) {
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
inline std::uint64_t load_u64(std::span<const std::byte> bytes) {
  std::uint64_t value = 0;
  std::memcpy(&value, bytes.data(), sizeof value);
  return value;
}
inline void store_u64(std::span<std::byte> bytes, std::uint64_t value) {
  std::memcpy(bytes.data(), &value, sizeof value);
}

}  // namespace ethx::roce::detail
