// The verbs-like types of the RoCEv2 comparison engine: work requests, work completions,
// access flags and queue pair configuration. Shaped after libibverbs (ibv_send_wr, ibv_wc) so a
// reader who knows verbs recognises them; see docs/roce.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "address-map/fabric_types.hpp"
#include "packet-engine/mac_addr.hpp"

namespace ethx::roce {

using QpNum = std::uint32_t;  // 24 bits on the wire
using CqId = std::uint32_t;

// Memory region access rights (ibv_access_flags). Local read is always granted.
enum Access : std::uint32_t {
  kAccessLocalWrite = 1u << 0,
  kAccessRemoteWrite = 1u << 1,
  kAccessRemoteRead = 1u << 2,
  kAccessRemoteAtomic = 1u << 3,
};

// One scatter/gather element: `length` bytes at virtual address `addr` of the region `lkey`.
struct Sge {
  std::uint64_t addr = 0;
  std::uint32_t length = 0;
  std::uint32_t lkey = 0;
};

enum class WrOpcode : std::uint8_t {
  kSend,
  kSendWithImm,
  kRdmaWrite,
  kRdmaWriteWithImm,
  kRdmaRead,
  kAtomicCompareSwap,
  kAtomicFetchAdd,
};

struct SendWr {
  std::uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::kSend;
  std::vector<Sge> sg_list;
  bool signaled = true;  // produce a completion on success (errors always complete)
  bool solicited = false;
  std::uint64_t remote_addr = 0;  // WRITE / READ / atomics
  std::uint32_t rkey = 0;
  std::uint64_t compare_add = 0;  // FETCH_ADD: addend; COMPARE_SWAP: expected value
  std::uint64_t swap = 0;         // COMPARE_SWAP: new value
  std::uint32_t imm_data = 0;     // *_WITH_IMM
};

struct RecvWr {
  std::uint64_t wr_id = 0;
  std::vector<Sge> sg_list;
};

enum class WcStatus : std::uint8_t {
  kSuccess,
  kLocalLengthError,        // a receive buffer too small, or sg list too long
  kLocalProtectionError,    // an lkey that is not registered, out of range or not writable
  kWrFlushError,            // the QP entered the error state before this WR completed
  kRemoteAccessError,       // NAK remote access error (rkey, range or rights)
  kRemoteInvalidRequest,    // NAK invalid request
  kRemoteOperationalError,  // NAK remote operational error
  kRetryExceeded,           // no acknowledgement after retry_count retransmissions
  kRnrRetryExceeded,        // receiver not ready after rnr_retry retries
  kBadResponse,             // a response that does not fit the request
};
const char* to_string(WcStatus status);

enum class WcOpcode : std::uint8_t {
  kSend,
  kRdmaWrite,
  kRdmaRead,
  kCompareSwap,
  kFetchAdd,
  kRecv,
  kRecvRdmaWithImm,
};

struct WorkCompletion {
  std::uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kSend;
  std::uint32_t byte_len = 0;  // bytes received (receives) or transferred (READ, atomics: 8)
  QpNum qp_num = 0;
  bool with_imm = false;
  std::uint32_t imm_data = 0;
  bool ok() const { return status == WcStatus::kSuccess; }
};

// Per-QP attributes (ibv_qp_attr), fixed at creation.
struct QpConfig {
  CqId send_cq = 0;
  CqId recv_cq = 0;
  std::uint32_t path_mtu_bytes = 1024;  // 256, 512, 1024, 2048 or 4096
  // Local ACK timeout: no progress for this long retransmits from the oldest unacked PSN.
  // IB encodes it as 4.096 us * 2^timeout; 14 (~67 ms) is the common verbs default. The
  // in-memory tests shorten it.
  TimeNs ack_timeout_ns = 67'108'864;
  std::uint8_t retry_count = 7;              // timeouts and sequence NAKs before kRetryExceeded
  std::uint8_t rnr_retry = 7;                // 7 means retry forever (IBA 9.7.5.2.8)
  std::uint8_t min_rnr_timer_code = 12;      // advertised in RNR NAKs: 0.64 ms (IBA table 45)
  std::uint32_t max_inflight_packets = 256;  // PSN window of unacknowledged request packets
  std::uint32_t max_rd_atomic = 16;          // outstanding READ/atomic requests (initiator depth)
  std::uint32_t ack_every_packets = 16;      // AckReq on every Nth packet of a long message
  std::uint32_t atomic_replay_entries = 16;  // responder's saved atomic results (duplicates)
  std::size_t max_send_wr = 4096;
  std::size_t max_recv_wr = 4096;
  std::size_t max_sge = 16;
  std::uint32_t initial_psn = 0;  // our first request PSN (24 bits)
};

// The peer of a connected QP (what RDMA-CM exchanges out of band).
struct QpRemote {
  MacAddr mac;
  std::uint32_t ip = 0;  // host order
  QpNum qpn = 0;
  std::uint32_t initial_psn = 0;  // the peer's first request PSN: our first expected PSN
};

inline constexpr std::uint32_t kMinPathMtuBytes = 256;
inline constexpr std::uint32_t kMaxPathMtuBytes = 4096;
inline constexpr bool valid_path_mtu(std::uint32_t bytes) {
  return bytes >= kMinPathMtuBytes && bytes <= kMaxPathMtuBytes && (bytes & (bytes - 1)) == 0;
}

}  // namespace ethx::roce
