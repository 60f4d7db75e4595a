#include "packet-engine/wire.hpp"

#include <algorithm>
#include <boost/crc.hpp>
#include <cstddef>
#include <cstring>

#include "packet-engine/packed_bytes.hpp"

namespace ethx::wire {
namespace {

using packed::load;
using packed::load_field;
using packed::store;
using packed::store_field;

// Checks length and payload_bytes against what the opcode allows.
bool lengths_valid(Opcode opcode, std::uint16_t length, std::uint16_t payload_bytes,
                   std::uint8_t status) {
  const bool atomic_width = length == 4 || length == 8;
  switch (opcode) {
    case Opcode::kReadReq:
      return length > 0 && payload_bytes == 0;
    case Opcode::kReadResp:
    case Opcode::kWritePosted:
    case Opcode::kWriteReq:
      return length > 0 && payload_bytes == length;
    case Opcode::kWriteAck:
    case Opcode::kFlushReq:
    case Opcode::kFlushResp:
      return payload_bytes == 0;
    case Opcode::kAtomicFetchAdd:
    case Opcode::kAtomicSwap:
    case Opcode::kAtomicResp:
      return atomic_width && payload_bytes == length;
    case Opcode::kAtomicCas:
      return atomic_width && payload_bytes == 2 * length;
    case Opcode::kErrorResp:
      return payload_bytes == 0 && status != 0;
  }
  return false;
}

// Writes the Ethernet header in place, field by field (see packed::store_field).
void store_ethernet_header(std::span<std::byte> frame, const MacAddr& dst, const MacAddr& src,
                           std::uint16_t ether_type) {
  if (frame.size() < kEthernetHeaderBytes) return;  // callers size the frame first
  std::memcpy(frame.data() + offsetof(EthernetHeader, dst), dst.octets.data(), dst.octets.size());
  std::memcpy(frame.data() + offsetof(EthernetHeader, src), src.octets.data(), src.octets.size());
  store_field<be::big_uint16_buf_t>(frame, offsetof(EthernetHeader, ether_type), ether_type);
}

}  // namespace

const char* to_string(Opcode opcode) {
  switch (opcode) {
    case Opcode::kReadReq:
      return "read-req";
    case Opcode::kReadResp:
      return "read-resp";
    case Opcode::kWritePosted:
      return "write-posted";
    case Opcode::kWriteReq:
      return "write-req";
    case Opcode::kWriteAck:
      return "write-ack";
    case Opcode::kAtomicFetchAdd:
      return "atomic-fetch-add";
    case Opcode::kAtomicSwap:
      return "atomic-swap";
    case Opcode::kAtomicCas:
      return "atomic-cas";
    case Opcode::kAtomicResp:
      return "atomic-resp";
    case Opcode::kFlushReq:
      return "flush-req";
    case Opcode::kFlushResp:
      return "flush-resp";
    case Opcode::kErrorResp:
      return "error-resp";
  }
  return "unknown";
}

const char* to_string(Status status) {
  switch (status) {
    case Status::kOk:
      return "ok";
    case Status::kOutOfRange:
      return "out-of-range";
    case Status::kNoRights:
      return "no-rights";
    case Status::kPartition:
      return "partition";
    case Status::kBadRequest:
      return "bad-request";
    case Status::kTimeout:
      return "timeout";
    case Status::kUnreachable:
      return "unreachable";
    case Status::kBusy:
      return "busy";
  }
  return "unknown";
}

const char* to_string(DecodeError error) {
  switch (error) {
    case DecodeError::kOk:
      return "ok";
    case DecodeError::kTruncatedEthernet:
      return "truncated-ethernet";
    case DecodeError::kNotFabric:
      return "not-fabric";
    case DecodeError::kTruncatedHeader:
      return "truncated-header";
    case DecodeError::kBadVersion:
      return "bad-version";
    case DecodeError::kBodyPastFrame:
      return "body-past-frame";
    case DecodeError::kBadCrc:
      return "bad-crc";
    case DecodeError::kNoTransactions:
      return "no-transactions";
    case DecodeError::kTruncatedTxn:
      return "truncated-txn";
    case DecodeError::kPayloadPastBody:
      return "payload-past-body";
    case DecodeError::kUnknownOpcode:
      return "unknown-opcode";
    case DecodeError::kBadLength:
      return "bad-length";
    case DecodeError::kTxnCountMismatch:
      return "txn-count-mismatch";
  }
  return "unknown";
}

namespace {

std::uint16_t load_u16(const std::byte* at) {
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(at[0]) << 8 |
                                    std::to_integer<unsigned>(at[1]));
}

// decode_frame's checks from the frame header on (the Ethernet header is checked already);
// sets `body_bytes` when the result is kOk.
DecodeError check_frame_header(std::span<const std::byte> frame, Crc crc, std::size_t& body_bytes) {
  if (frame.size() < kBodyOffset) return DecodeError::kTruncatedHeader;
  constexpr std::size_t kAt = kEthernetHeaderBytes;
  if (load_field<be::big_uint8_buf_t>(frame, kAt + offsetof(FrameHeader, version)) != kVersion) {
    return DecodeError::kBadVersion;
  }
  body_bytes = load_field<be::big_uint16_buf_t>(frame, kAt + offsetof(FrameHeader, body_bytes));
  if (frame.size() - kBodyOffset < body_bytes + kCrcBytes) return DecodeError::kBodyPastFrame;
  if (crc == Crc::kOn) {
    const std::size_t crc_offset = kBodyOffset + body_bytes;
    const std::uint32_t carried_crc = load_field<be::big_uint32_buf_t>(frame, crc_offset);
    if (crc32c(frame.first(crc_offset)) != carried_crc) return DecodeError::kBadCrc;
  }
  return DecodeError::kOk;
}

// Validates every transaction of `body`, which claims `txn_count` of them, so consumers can
// iterate without error paths. Reads the headers in place: no TxnView is filled.
DecodeError check_txns(std::span<const std::byte> body, std::size_t txn_count) {
  const std::byte* at = body.data();
  std::size_t left = body.size();
  for (std::size_t i = 0; i < txn_count; ++i) {
    // An exhausted body means fewer transactions than announced, not a truncated one.
    if (left == 0) return DecodeError::kTxnCountMismatch;
    if (left < kTxnHeaderBytes) return DecodeError::kTruncatedTxn;
    const std::uint16_t payload_bytes = load_u16(at + offsetof(TxnHeader, payload_bytes));
    if (left - kTxnHeaderBytes < payload_bytes) return DecodeError::kPayloadPastBody;
    const auto opcode = std::to_integer<std::uint8_t>(at[offsetof(TxnHeader, opcode)]);
    if (!is_known_opcode(opcode)) return DecodeError::kUnknownOpcode;
    if (!lengths_valid(static_cast<Opcode>(opcode), load_u16(at + offsetof(TxnHeader, length)),
                       payload_bytes,
                       std::to_integer<std::uint8_t>(at[offsetof(TxnHeader, status)]))) {
      return DecodeError::kBadLength;
    }
    at += kTxnHeaderBytes + payload_bytes;
    left -= kTxnHeaderBytes + payload_bytes;
  }
  return left == 0 ? DecodeError::kOk : DecodeError::kTxnCountMismatch;
}

// decode_frame's last checks: the transactions, or what a frame without any may be.
DecodeError check_body(std::span<const std::byte> body, std::uint8_t flags,
                       std::uint8_t txn_count) {
  if (txn_count == 0) {
    // Only a link control frame (an ACK or NAK, never sequenced) may carry no transactions.
    const bool control = (flags & kFlagAck) != 0 && (flags & kFlagSeq) == 0;
    return control && body.empty() ? DecodeError::kOk : DecodeError::kNoTransactions;
  }
  return check_txns(body, txn_count);
}

}  // namespace

DecodeError decode_frame(std::span<const std::byte> frame, FrameView& out, Crc crc) {
  std::uint16_t ether_type = 0;
  if (!peek_ethernet(frame, out.dst_mac, out.src_mac, ether_type)) {
    return DecodeError::kTruncatedEthernet;
  }
  if (ether_type != kEtherTypeFabric) return DecodeError::kNotFabric;
  std::size_t body_bytes = 0;
  const DecodeError error = check_frame_header(frame, crc, body_bytes);
  if (error != DecodeError::kOk) return error;

  // Field by field (packed::load_field): no FrameHeader copied to the stack and read back.
  constexpr std::size_t kAt = kEthernetHeaderBytes;
  out.flags = load_field<be::big_uint8_buf_t>(frame, kAt + offsetof(FrameHeader, flags));
  out.src_gpu = load_field<be::big_uint16_buf_t>(frame, kAt + offsetof(FrameHeader, src_gpu));
  out.dst_gpu = load_field<be::big_uint16_buf_t>(frame, kAt + offsetof(FrameHeader, dst_gpu));
  out.partition = load_field<be::big_uint16_buf_t>(frame, kAt + offsetof(FrameHeader, partition));
  out.credits = load_field<be::big_uint8_buf_t>(frame, kAt + offsetof(FrameHeader, credits));
  out.seq = load_field<be::big_uint32_buf_t>(frame, kAt + offsetof(FrameHeader, seq));
  out.ack = load_field<be::big_uint32_buf_t>(frame, kAt + offsetof(FrameHeader, ack));
  out.txn_count = load_field<be::big_uint8_buf_t>(frame, kAt + offsetof(FrameHeader, txn_count));
  out.incarnation =
      load_field<be::big_uint32_buf_t>(frame, kAt + offsetof(FrameHeader, incarnation));
  out.body = frame.subspan(kBodyOffset, body_bytes);
  return check_body(out.body, out.flags, out.txn_count);
}

DecodeError validate_frame(std::span<const std::byte> frame, GpuId& src_gpu, Crc crc) {
  if (frame.size() < kEthernetHeaderBytes) return DecodeError::kTruncatedEthernet;
  if (load_u16(frame.data() + offsetof(EthernetHeader, ether_type)) != kEtherTypeFabric) {
    return DecodeError::kNotFabric;
  }
  std::size_t body_bytes = 0;
  DecodeError error = check_frame_header(frame, crc, body_bytes);
  if (error != DecodeError::kOk) return error;
  constexpr std::size_t kAt = kEthernetHeaderBytes;
  error =
      check_body(frame.subspan(kBodyOffset, body_bytes),
                 load_field<be::big_uint8_buf_t>(frame, kAt + offsetof(FrameHeader, flags)),
                 load_field<be::big_uint8_buf_t>(frame, kAt + offsetof(FrameHeader, txn_count)));
  if (error == DecodeError::kOk) {
    src_gpu = load_field<be::big_uint16_buf_t>(frame, kAt + offsetof(FrameHeader, src_gpu));
  }
  return error;
}

FrameBuilder::FrameBuilder(std::size_t frame_bytes_max, Crc crc)
    : frame_bytes_max_(clamp_frame_bytes_max(frame_bytes_max)), crc_(crc) {}

void FrameBuilder::start(const FrameAddress& address, Frame buffer) {
  if (buffer.capacity() > frame_.capacity()) frame_.swap(buffer);
  start(address);
}

void FrameBuilder::start(const FrameAddress& address) {
  address_ = address;
  frame_.reserve(frame_bytes_max_);
  // The headers, and room for the CRC at the end from the start: finish() then writes into a
  // frame already of its final size instead of growing it once more (a zero-fill and a store
  // of the vector's end, read back at once when the frame is handed out). Copied from zeros,
  // not resize()d: resize fills std::byte one byte at a time.
  static constexpr std::array<std::byte, kBodyOffset + kCrcBytes> kBlank{};
  frame_.assign(kBlank.begin(), kBlank.end());
  txn_count_ = 0;
  last_txn_offset_ = 0;
  started_ = true;
}

bool FrameBuilder::fits(std::size_t payload_bytes) const {
  return started_ && txn_count_ < 255 &&
         frame_.size() + kTxnHeaderBytes + payload_bytes <= frame_bytes_max_;
}

std::span<std::byte> FrameBuilder::append(const TxnFields& fields, std::size_t payload_bytes) {
  // Where the CRC's room was: it moves to the new end.
  last_txn_offset_ = frame_.size() - kCrcBytes;
  frame_.resize(frame_.size() + kTxnHeaderBytes + payload_bytes);
  const std::span<std::byte> bytes(frame_);
  const std::size_t at = last_txn_offset_;
  store_field<be::big_uint8_buf_t>(bytes, at + offsetof(TxnHeader, opcode),
                                   static_cast<std::uint8_t>(fields.opcode));
  store_field<be::big_uint8_buf_t>(bytes, at + offsetof(TxnHeader, status),
                                   static_cast<std::uint8_t>(fields.status));
  store_field<be::big_uint16_buf_t>(bytes, at + offsetof(TxnHeader, tag), fields.tag);
  store_field<be::big_uint16_buf_t>(bytes, at + offsetof(TxnHeader, length), fields.length);
  store_field<be::big_uint16_buf_t>(bytes, at + offsetof(TxnHeader, payload_bytes),
                                    static_cast<std::uint16_t>(payload_bytes));
  store_field<be::big_uint64_buf_t>(bytes, at + offsetof(TxnHeader, address), fields.address);
  ++txn_count_;
  return std::span<std::byte>(frame_).subspan(last_txn_offset_ + kTxnHeaderBytes, payload_bytes);
}

bool FrameBuilder::try_extend_posted_write(std::uint64_t address, std::span<const std::byte> data,
                                           std::size_t max_payload) {
  if (!started_ || txn_count_ == 0) return false;
  auto header = load<TxnHeader>(std::span<const std::byte>(frame_), last_txn_offset_);
  if (header.opcode.value() != static_cast<std::uint8_t>(Opcode::kWritePosted)) return false;
  const std::size_t length = header.length.value();
  if (header.address.value() + length != address) return false;
  if (length + data.size() > max_payload) return false;
  if (frame_.size() + data.size() > frame_bytes_max_) return false;
  frame_.insert(frame_.end() - kCrcBytes, data.begin(), data.end());
  header.length = static_cast<std::uint16_t>(length + data.size());
  header.payload_bytes = static_cast<std::uint16_t>(length + data.size());
  store(std::span<std::byte>(frame_), last_txn_offset_, header);
  return true;
}

Frame FrameBuilder::finish(std::uint8_t flags, std::uint32_t seq, std::uint32_t ack,
                           std::uint8_t credits) {
  // The CRC's room is there since start(): nothing grows the vector here, whose end pointer,
  // written last, would be read back with its begin in one wide load when the frame is handed
  // out below (a store-forwarding stall on every frame, see packed::store_field).
  const std::size_t crc_offset = frame_.size() - kCrcBytes;
  const std::span<std::byte> bytes(frame_);
  store_ethernet_header(bytes, address_.dst_mac, address_.src_mac, kEtherTypeFabric);
  constexpr std::size_t kAt = kEthernetHeaderBytes;
  store_field<be::big_uint8_buf_t>(bytes, kAt + offsetof(FrameHeader, version), kVersion);
  store_field<be::big_uint8_buf_t>(bytes, kAt + offsetof(FrameHeader, flags), flags);
  store_field<be::big_uint16_buf_t>(bytes, kAt + offsetof(FrameHeader, src_gpu), address_.src_gpu);
  store_field<be::big_uint16_buf_t>(bytes, kAt + offsetof(FrameHeader, dst_gpu), address_.dst_gpu);
  store_field<be::big_uint16_buf_t>(bytes, kAt + offsetof(FrameHeader, partition),
                                    address_.partition);
  store_field<be::big_uint16_buf_t>(bytes, kAt + offsetof(FrameHeader, body_bytes),
                                    static_cast<std::uint16_t>(crc_offset - kBodyOffset));
  store_field<be::big_uint8_buf_t>(bytes, kAt + offsetof(FrameHeader, txn_count),
                                   static_cast<std::uint8_t>(txn_count_));
  store_field<be::big_uint8_buf_t>(bytes, kAt + offsetof(FrameHeader, credits), credits);
  store_field<be::big_uint32_buf_t>(bytes, kAt + offsetof(FrameHeader, seq), seq);
  store_field<be::big_uint32_buf_t>(bytes, kAt + offsetof(FrameHeader, ack), ack);
  store_field<be::big_uint32_buf_t>(bytes, kAt + offsetof(FrameHeader, incarnation),
                                    address_.incarnation);
  const std::uint32_t crc = crc_ == Crc::kOn ? crc32c(bytes.first(crc_offset)) : 0;
  store_field<be::big_uint32_buf_t>(bytes, crc_offset, crc);

  started_ = false;
  txn_count_ = 0;
  Frame done;
  done.swap(frame_);
  return done;
}

namespace {

// Castagnoli polynomial, reflected, as in iSCSI and SCTP; Boost.CRC does the table work. It
// moves ~0.5 GB/s, which made the CRC the switch's main cost, hence the hardware path below.
std::uint32_t crc32c_table(std::span<const std::byte> bytes) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

#if defined(__x86_64__)
// SSE4.2's crc32 instruction computes exactly CRC-32C, 8 bytes per instruction.
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(std::span<const std::byte> bytes) {
  std::uint64_t crc = 0xFFFFFFFFu;
  const std::byte* data = bytes.data();
  std::size_t left = bytes.size();
  for (; left >= 8; left -= 8, data += 8) {
    std::uint64_t word;
    std::memcpy(&word, data, 8);
    crc = __builtin_ia32_crc32di(crc, word);
  }
  auto crc32 = static_cast<std::uint32_t>(crc);
  for (; left > 0; --left, ++data) {
    crc32 = __builtin_ia32_crc32qi(crc32, std::to_integer<unsigned char>(*data));
  }
  return crc32 ^ 0xFFFFFFFFu;
}
#endif

}  // namespace

std::uint32_t crc32c(std::span<const std::byte> bytes) {
#if defined(__x86_64__)
  static const bool has_sse42 = __builtin_cpu_supports("sse4.2");
  if (has_sse42) return crc32c_sse42(bytes);
#endif
  return crc32c_table(bytes);
}

std::uint32_t crc32c_portable(std::span<const std::byte> bytes) {
  return crc32c_table(bytes);
}

bool restamp_link_fields(std::span<std::byte> frame, std::uint8_t flags, std::uint32_t seq,
                         std::uint32_t ack, std::uint8_t credits, Crc crc_mode) {
  FrameView view;
  const std::span<const std::byte> readonly(frame);
  if (decode_frame(readonly, view, crc_mode) != DecodeError::kOk) return false;
  // A control frame (no transactions) must stay an unsequenced ACK, or it would not decode.
  const bool control_flags = (flags & kFlagAck) != 0 && (flags & kFlagSeq) == 0;
  if (view.txn_count == 0 && !control_flags) return false;
  auto header = load<FrameHeader>(readonly, kEthernetHeaderBytes);
  header.flags = flags;
  header.seq = seq;
  header.ack = ack;
  header.credits = credits;
  store(frame, kEthernetHeaderBytes, header);
  if (crc_mode == Crc::kOff) return true;
  const std::size_t crc_offset = kBodyOffset + view.body.size();
  be::big_uint32_buf_t crc;
  crc = crc32c(readonly.first(crc_offset));
  store(frame, crc_offset, crc);
  return true;
}

bool fill_crc(std::span<std::byte> frame) {
  const std::span<const std::byte> readonly(frame);
  MacAddr dst;
  MacAddr src;
  std::uint16_t ether_type = 0;
  if (!peek_ethernet(readonly, dst, src, ether_type) || ether_type != kEtherTypeFabric ||
      frame.size() < kBodyOffset) {
    return false;
  }
  const auto header = load<FrameHeader>(readonly, kEthernetHeaderBytes);
  const std::size_t crc_offset = kBodyOffset + header.body_bytes.value();
  if (crc_offset + kCrcBytes > frame.size()) return false;
  be::big_uint32_buf_t crc;
  crc = crc32c(readonly.first(crc_offset));
  store(frame, crc_offset, crc);
  return true;
}

Frame make_echo_frame(const MacAddr& dst, const MacAddr& src, std::span<const std::byte> payload) {
  Frame frame(kEthernetHeaderBytes + payload.size());
  store_ethernet_header(frame, dst, src, kEtherTypeEcho);
  std::copy(payload.begin(), payload.end(), frame.begin() + kEthernetHeaderBytes);
  return frame;
}

void put_operand(std::span<std::byte> bytes, std::uint64_t value) {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::byte>(value >> (8 * (bytes.size() - 1 - i)));
  }
}

std::uint64_t get_operand(std::span<const std::byte> bytes) {
  std::uint64_t value = 0;
  for (std::byte octet : bytes) value = (value << 8) | std::to_integer<std::uint64_t>(octet);
  return value;
}

std::size_t request_payload_bytes(Opcode opcode, std::size_t length) {
  switch (opcode) {
    case Opcode::kWritePosted:
    case Opcode::kWriteReq:
    case Opcode::kAtomicFetchAdd:
    case Opcode::kAtomicSwap:
      return length;
    case Opcode::kAtomicCas:
      return 2 * length;
    default:
      return 0;
  }
}

WireCost posted_write_cost(std::size_t payload_bytes, std::size_t frame_bytes_max) {
  WireCost cost;
  cost.payload_bytes = payload_bytes;
  const std::size_t per_frame = max_txn_payload(frame_bytes_max);
  std::size_t left = payload_bytes;
  while (left > 0) {
    const std::size_t chunk = std::min(left, per_frame);
    const std::size_t frame_bytes = kFrameOverheadBytes + kTxnHeaderBytes + chunk;
    const std::size_t on_wire = wire_bytes(frame_bytes);
    cost.frames += 1;
    cost.wire_bytes += on_wire;
    cost.header_bytes += on_wire - kEthernetWireExtraBytes - chunk;
    left -= chunk;
  }
  cost.efficiency = cost.wire_bytes == 0
                        ? 0.0
                        : static_cast<double>(payload_bytes) / static_cast<double>(cost.wire_bytes);
  return cost;
}

}  // namespace ethx::wire
