// The ethx wire format: one encoder and one decoder for every transport.
//
// A fabric frame is an Ethernet II frame with EtherType 0x88B5 (IEEE 802 local experimental):
//
//   [Ethernet header 14 B][frame header 24 B][txn header 16 B + payload]...[CRC-32C 4 B]
//
// Byte offsets are documented in docs/wire-format.md. All multi-byte fields are big-endian and
// are read and written through Boost.Endian unaligned buffer types, copied in and out with
// memcpy: the 14-byte Ethernet header misaligns everything after it, so a pointer cast into a
// frame would be undefined behaviour.
#pragma once

#include <boost/endian/buffers.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "address-map/fabric_types.hpp"
#include "packet-engine/ethernet.hpp"
#include "packet-engine/mac_addr.hpp"

namespace ethx::wire {

using Frame = std::vector<std::byte>;

inline constexpr std::uint16_t kEtherTypeFabric = 0x88B5;  // IEEE 802 local experimental 1
// Bare echo frames for baselines: the same path, no engine logic (local experimental 2).
inline constexpr std::uint16_t kEtherTypeEcho = 0x88B6;
// 2: the frame header grew the sender's incarnation (a version-1 peer would misread it).
inline constexpr std::uint8_t kVersion = 2;

// ---- Packed wire structs: exact sizes, checked at compile time. ----------------------------

namespace be = boost::endian;

// Follows the Ethernet header at offset 14.
struct FrameHeader {
  be::big_uint8_buf_t version;      // kVersion
  be::big_uint8_buf_t flags;        // FrameFlag bits
  be::big_uint16_buf_t src_gpu;     // requester or responder GPU id
  be::big_uint16_buf_t dst_gpu;     // GPU id the frame is for
  be::big_uint16_buf_t partition;   // isolation domain of the sender
  be::big_uint16_buf_t body_bytes;  // bytes of transactions after this header, CRC excluded
  be::big_uint8_buf_t txn_count;    // transactions packed in this frame, >= 1
  be::big_uint8_buf_t credits;      // flow-control credits returned (valid with kFlagCredit)
  be::big_uint32_buf_t seq;         // sequence number (valid with kFlagSeq)
  be::big_uint32_buf_t ack;         // cumulative acknowledgement (valid with kFlagAck)
  // Which start of the sender's engine sent this: a restarted GPU numbers its frames from 1
  // again, and a new incarnation tells its peers to reset the pair instead of taking the
  // frames for duplicates (reliable_links.hpp).
  be::big_uint32_buf_t incarnation;
};
static_assert(sizeof(FrameHeader) == 24);

// One transaction; `payload_bytes` of payload follow it directly.
struct TxnHeader {
  be::big_uint8_buf_t opcode;          // Opcode
  be::big_uint8_buf_t status;          // Status; 0 except on responses that report an error
  be::big_uint16_buf_t tag;            // matches a response to its request
  be::big_uint16_buf_t length;         // access length in bytes (read/write) or operand width
  be::big_uint16_buf_t payload_bytes;  // bytes following this header
  be::big_uint64_buf_t address;        // byte offset in the destination GPU's local memory
};
static_assert(sizeof(TxnHeader) == 16);

using ethx::kEthernetHeaderBytes;
inline constexpr std::size_t kFrameHeaderBytes = sizeof(FrameHeader);
inline constexpr std::size_t kTxnHeaderBytes = sizeof(TxnHeader);
inline constexpr std::size_t kCrcBytes = 4;
inline constexpr std::size_t kBodyOffset = kEthernetHeaderBytes + kFrameHeaderBytes;  // 38
// Bytes a frame carries besides its transactions.
inline constexpr std::size_t kFrameOverheadBytes = kBodyOffset + kCrcBytes;  // 42
// An Ethernet frame is at least 60 B before the FCS; shorter frames are padded on the wire.
inline constexpr std::size_t kMinEthernetFrameBytes = 60;
// Wire time beyond the frame bytes: preamble+SFD 8 B, FCS 4 B, inter-frame gap 12 B (IEEE 802.3).
inline constexpr std::size_t kEthernetWireExtraBytes = 24;
// Largest frame the default transports accept: AF_XDP copy mode takes at most
// chunk size - 256 B of headroom (the kernel's XDP_PACKET_HEADROOM), 2048 - 256
// (docs/sources.md).
inline constexpr std::size_t kDefaultFrameBytesMax = 1792;
inline constexpr std::size_t kAbsoluteFrameBytesMax = 9000;  // jumbo; larger is rejected

// Bytes one frame of `frame_bytes` occupies on the wire, padding and framing included.
constexpr std::size_t wire_bytes(std::size_t frame_bytes) {
  return (frame_bytes < kMinEthernetFrameBytes ? kMinEthernetFrameBytes : frame_bytes) +
         kEthernetWireExtraBytes;
}

// Smallest usable frame limit: one transaction with a 64 B payload.
inline constexpr std::size_t kMinFrameBytesMax = kFrameOverheadBytes + kTxnHeaderBytes + 64;

// The frame limit FrameBuilder and max_txn_payload actually use: `frame_bytes_max` raised to
// kMinFrameBytesMax and capped at kAbsoluteFrameBytesMax, so the two always agree and the
// payload limit is never 0 (which would make splitting loop forever).
constexpr std::size_t clamp_frame_bytes_max(std::size_t frame_bytes_max) {
  return frame_bytes_max < kMinFrameBytesMax        ? kMinFrameBytesMax
         : frame_bytes_max > kAbsoluteFrameBytesMax ? kAbsoluteFrameBytesMax
                                                    : frame_bytes_max;
}

// Largest payload one transaction may carry in a frame of at most `frame_bytes_max` (clamped
// as above), rounded down to a multiple of 64 B so split accesses stay cache-line aligned.
constexpr std::size_t max_txn_payload(std::size_t frame_bytes_max) {
  const std::size_t room =
      clamp_frame_bytes_max(frame_bytes_max) - kFrameOverheadBytes - kTxnHeaderBytes;
  return room / 64 * 64;
}

enum FrameFlag : std::uint8_t {
  kFlagSeq = 1u << 0,     // `seq` is valid (reliable link or end-to-end mode)
  kFlagAck = 1u << 1,     // `ack` is valid
  kFlagNak = 1u << 2,     // with kFlagAck: frames after `ack` are missing, resend from ack + 1
  kFlagCredit = 1u << 3,  // `credits` is valid
};

enum class Opcode : std::uint8_t {
  kReadReq = 0x01,         // length = bytes to read; no payload
  kReadResp = 0x02,        // payload = the data, payload_bytes == length
  kWritePosted = 0x03,     // payload = the data; no response
  kWriteReq = 0x04,        // payload = the data; answered by kWriteAck
  kWriteAck = 0x05,        // no payload
  kAtomicFetchAdd = 0x06,  // length = 4 or 8; payload = addend
  kAtomicSwap = 0x07,      // length = 4 or 8; payload = new value
  kAtomicCas = 0x08,       // length = 4 or 8; payload = expected, then desired (2 × length)
  kAtomicResp = 0x09,      // payload = the old value
  kFlushReq = 0x0A,        // no payload; completes after every earlier write is performed
  kFlushResp = 0x0B,       // no payload
  kErrorResp = 0x0C,       // status says why; address echoes the faulting address
};

// Inline: the simulator asks for every frame it launches, the endpoint for every transaction.
constexpr bool is_known_opcode(std::uint8_t value) {
  return value >= static_cast<std::uint8_t>(Opcode::kReadReq) &&
         value <= static_cast<std::uint8_t>(Opcode::kErrorResp);
}
constexpr bool is_request(Opcode opcode) {
  switch (opcode) {
    case Opcode::kReadReq:
    case Opcode::kWritePosted:
    case Opcode::kWriteReq:
    case Opcode::kAtomicFetchAdd:
    case Opcode::kAtomicSwap:
    case Opcode::kAtomicCas:
    case Opcode::kFlushReq:
      return true;
    default:
      return false;
  }
}
constexpr bool is_atomic_request(Opcode opcode) {
  return opcode == Opcode::kAtomicFetchAdd || opcode == Opcode::kAtomicSwap ||
         opcode == Opcode::kAtomicCas;
}
const char* to_string(Opcode opcode);

// Why a request failed. Carried in kErrorResp and in local error completions.
enum class Status : std::uint8_t {
  kOk = 0,
  kOutOfRange = 1,   // address range outside the completer's memory or outside every window
  kNoRights = 2,     // the window or the completer's export does not grant the access
  kPartition = 3,    // requester and completer are in different partitions
  kBadRequest = 4,   // a request the completer cannot serve (length, alignment)
  kTimeout = 5,      // local: no response before the deadline
  kUnreachable = 6,  // local: no route to the destination GPU
  kBusy = 7,         // local: the outstanding table is full
};
const char* to_string(Status status);

// ---- Decoding ------------------------------------------------------------------------------

enum class DecodeError : std::uint8_t {
  kOk = 0,
  kTruncatedEthernet,  // shorter than an Ethernet header
  kNotFabric,          // EtherType is not kEtherTypeFabric
  kTruncatedHeader,    // no room for the frame header
  kBadVersion,         // frame header version is not kVersion
  kBodyPastFrame,      // body_bytes + CRC run past the end of the frame
  kBadCrc,             // CRC-32C mismatch
  kNoTransactions,     // txn_count is zero in a frame that is not an ACK/NAK control frame
  kTruncatedTxn,       // a transaction header runs past the body
  kPayloadPastBody,    // a transaction's payload runs past the body
  kUnknownOpcode,      // opcode not in Opcode
  kBadLength,          // length/payload_bytes inconsistent with the opcode
  kTxnCountMismatch,   // body holds more or fewer transactions than txn_count
};
inline constexpr std::size_t kDecodeErrorCount = 13;
const char* to_string(DecodeError error);

struct TxnView {
  Opcode opcode{};
  Status status = Status::kOk;
  std::uint16_t tag = 0;
  std::uint16_t length = 0;
  std::uint64_t address = 0;
  std::span<const std::byte> payload;
};

struct FrameView {
  MacAddr dst_mac;
  MacAddr src_mac;
  std::uint8_t flags = 0;
  GpuId src_gpu = kInvalidGpu;
  GpuId dst_gpu = kInvalidGpu;
  std::uint16_t partition = 0;
  std::uint8_t credits = 0;
  std::uint32_t seq = 0;
  std::uint32_t ack = 0;
  std::uint8_t txn_count = 0;
  std::uint32_t incarnation = 0;
  std::span<const std::byte> body;  // the transactions, validated by decode_frame
};

// Reads only the Ethernet header. False if the frame is shorter than one. Inline, field by
// field straight into the outputs: a switch calls it on every frame, and decode_frame too.
inline bool peek_ethernet(std::span<const std::byte> frame, MacAddr& dst, MacAddr& src,
                          std::uint16_t& ether_type) {
  if (frame.size() < kEthernetHeaderBytes) return false;
  std::memcpy(dst.octets.data(), frame.data() + offsetof(EthernetHeader, dst), dst.octets.size());
  std::memcpy(src.octets.data(), frame.data() + offsetof(EthernetHeader, src), src.octets.size());
  const std::size_t at = offsetof(EthernetHeader, ether_type);
  ether_type = static_cast<std::uint16_t>(std::to_integer<unsigned>(frame[at]) << 8 |
                                          std::to_integer<unsigned>(frame[at + 1]));
  return true;
}

// Whether frames carry a CRC-32C. Always kOn on a wire. kOff is the simulator's choice
// (docs/simulator.md, "The CRC"): its frames only move between its own objects, which never
// alter them, so FrameBuilder leaves the CRC field zero and nobody checks it; the one thing that
// does alter a frame, a switch's corrupt fault, computes the CRC first (SwitchConfig::crc).
enum class Crc : std::uint8_t { kOn, kOff };

// Validates the whole frame (header, CRC unless `crc` is kOff, every transaction) and fills
// `out`. Bytes after the CRC (Ethernet padding) are ignored. Never reads outside `frame`.
DecodeError decode_frame(std::span<const std::byte> frame, FrameView& out, Crc crc = Crc::kOn);

// The same checks as decode_frame, in the same order, so the same verdict for every frame, but
// nothing decoded beyond the sender's GPU id (`src_gpu`, set when the result is kOk): what a
// switch needs to admit a frame, without filling a whole FrameView it would throw away.
DecodeError validate_frame(std::span<const std::byte> frame, GpuId& src_gpu, Crc crc = Crc::kOn);

// Iterates the transactions of a frame that decode_frame accepted. decode_frame validated
// every one of them, so next() only reads (inline: the endpoint calls it for every
// transaction); it still checks the bounds, so even a misused cursor never reads outside the
// body.
class TxnCursor {
 public:
  explicit TxnCursor(const FrameView& frame) : rest_(frame.body) {}
  bool next(TxnView& out) {
    if (rest_.size() < kTxnHeaderBytes) return false;
    const std::byte* at = rest_.data();
    const std::size_t payload_bytes =
        field<be::big_uint16_buf_t>(at, offsetof(TxnHeader, payload_bytes));
    if (rest_.size() - kTxnHeaderBytes < payload_bytes) return false;
    out.opcode = static_cast<Opcode>(at[offsetof(TxnHeader, opcode)]);
    out.status = static_cast<Status>(at[offsetof(TxnHeader, status)]);
    out.tag = field<be::big_uint16_buf_t>(at, offsetof(TxnHeader, tag));
    out.length = field<be::big_uint16_buf_t>(at, offsetof(TxnHeader, length));
    out.address = field<be::big_uint64_buf_t>(at, offsetof(TxnHeader, address));
    out.payload = rest_.subspan(kTxnHeaderBytes, payload_bytes);
    rest_ = rest_.subspan(kTxnHeaderBytes + payload_bytes);
    return true;
  }

 private:
  // The field of type `Field` (a Boost.Endian buffer) at `offset` from `at`, copied out.
  template <class Field>
  static typename Field::value_type field(const std::byte* at, std::size_t offset) {
    Field value;
    std::memcpy(&value, at + offset, sizeof(Field));
    return value.value();
  }

  std::span<const std::byte> rest_;
};

// ---- Encoding ------------------------------------------------------------------------------

struct TxnFields {
  Opcode opcode{};
  Status status = Status::kOk;
  std::uint16_t tag = 0;
  std::uint16_t length = 0;
  std::uint64_t address = 0;
};

struct FrameAddress {
  MacAddr dst_mac;
  MacAddr src_mac;
  GpuId src_gpu = kInvalidGpu;
  GpuId dst_gpu = kInvalidGpu;
  std::uint16_t partition = 0;
  std::uint32_t incarnation = 0;  // the sender's (EngineConfig::incarnation)
};

// Packs transactions into one frame of at most frame_bytes_max bytes.
class FrameBuilder {
 public:
  // With Crc::kOff, finish() leaves the CRC field zero.
  explicit FrameBuilder(std::size_t frame_bytes_max, Crc crc = Crc::kOn);

  void start(const FrameAddress& address);
  // The same, building the frame in `buffer`'s memory (its contents are discarded): a runtime
  // that hands frame buffers back (Effects::spare) saves an allocation per frame.
  void start(const FrameAddress& address, Frame buffer);
  bool started() const { return started_; }
  std::size_t txn_count() const { return txn_count_; }
  // Room for one more transaction carrying `payload_bytes`?
  bool fits(std::size_t payload_bytes) const;
  // Appends a transaction and returns its payload area for the caller to fill.
  // Precondition: started() && fits(payload_bytes) && txn_count() < 255.
  std::span<std::byte> append(const TxnFields& fields, std::size_t payload_bytes);
  // Write combining: if the last transaction is a kWritePosted ending at `address` and the
  // data fits, grows it by `data` and returns true.
  bool try_extend_posted_write(std::uint64_t address, std::span<const std::byte> data,
                               std::size_t max_payload);
  // Writes the frame header and CRC and hands the frame over; the builder is then empty.
  Frame finish(std::uint8_t flags = 0, std::uint32_t seq = 0, std::uint32_t ack = 0,
               std::uint8_t credits = 0);

 private:
  std::size_t frame_bytes_max_;
  Crc crc_;
  FrameAddress address_;
  Frame frame_;  // once started: the headers, the transactions, then kCrcBytes for the CRC
  std::size_t txn_count_ = 0;
  std::size_t last_txn_offset_ = 0;
  bool started_ = false;
};

// CRC-32C (Castagnoli) of `bytes`, as carried in the trailer. Uses the CPU's crc32
// instruction where there is one.
std::uint32_t crc32c(std::span<const std::byte> bytes);
// The same through Boost.CRC's table, for CPUs without it and to cross-check the fast path.
std::uint32_t crc32c_portable(std::span<const std::byte> bytes);

// Rewrites the link fields of an encoded frame (the reliability layer stamps them when the
// frame is sent) and recomputes its CRC (with Crc::kOff: neither checks nor recomputes it).
// False, leaving the frame untouched, if it is not a valid fabric frame or the flags would
// make a control frame (no transactions) invalid.
bool restamp_link_fields(std::span<std::byte> frame, std::uint8_t flags, std::uint32_t seq,
                         std::uint32_t ack, std::uint8_t credits, Crc crc = Crc::kOn);

// Computes and stores the CRC of a fabric frame built with Crc::kOff, making it the frame
// FrameBuilder builds with Crc::kOn. False, changing nothing, if `frame` is not a fabric frame
// whose header, body and CRC fit in it.
bool fill_crc(std::span<std::byte> frame);

// A frame of kEtherTypeEcho: Ethernet header, then `payload` verbatim. Used for baselines.
Frame make_echo_frame(const MacAddr& dst, const MacAddr& src, std::span<const std::byte> payload);

// Atomic operands and old values travel big-endian in `bytes.size()` (4 or 8) bytes.
void put_operand(std::span<std::byte> bytes, std::uint64_t value);
std::uint64_t get_operand(std::span<const std::byte> bytes);

// Payload bytes a request carries for an access of `length` bytes.
std::size_t request_payload_bytes(Opcode opcode, std::size_t length);

// Header bytes and wire efficiency of moving `payload_bytes` with posted writes in frames of
// at most `frame_bytes_max`, counting Ethernet framing (preamble, FCS, gap, padding).
struct WireCost {
  std::size_t payload_bytes = 0;
  std::size_t frames = 0;
  std::size_t header_bytes = 0;  // frame bytes that are not payload, padding included
  std::size_t wire_bytes = 0;    // everything the link serializes
  double efficiency = 0.0;       // payload_bytes / wire_bytes
};
WireCost posted_write_cost(std::size_t payload_bytes, std::size_t frame_bytes_max);

}  // namespace ethx::wire
