// RoCEv2 wire format for the RDMA comparison engine: one encoder and one validating decoder.
//
// A RoCEv2 packet is an Ethernet II frame carrying IPv4 and UDP to port 4791, then the
// InfiniBand transport headers (InfiniBand Architecture Specification vol. 1, Annex A17):
//
//   [Ethernet 14][IPv4 20][UDP 8][BTH 12][RETH 16 | AETH 4 | AtomicETH 28 | ...][payload][pad]
//   [ICRC 4]
//
// Byte offsets are documented in docs/roce.md. Multi-byte fields are big-endian, read and
// written through Boost.Endian unaligned buffer types and copied with memcpy (the 14-byte
// Ethernet header misaligns everything after it; pointer casts into frames would be undefined
// behaviour). Only the reliable-connected (RC) opcodes are supported.
#pragma once

#include <boost/endian/buffers.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "packet-engine/ethernet.hpp"
#include "packet-engine/mac_addr.hpp"

namespace ethx::roce {

using Frame = std::vector<std::byte>;
namespace be = boost::endian;

inline constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr std::uint8_t kIpProtocolUdp = 17;
inline constexpr std::uint16_t kUdpPortRoceV2 = 4791;  // IANA, Annex A17.2.2
inline constexpr std::uint16_t kDefaultPkey = 0xFFFF;  // the default full-member partition

// ---- Packed wire structs: exact sizes, checked at compile time. ----------------------------

// RFC 791, no options (IHL = 5).
struct Ipv4Header {
  be::big_uint8_buf_t version_ihl;    // 0x45
  be::big_uint8_buf_t tos;            // DSCP (6 bits) << 2 | ECN (2 bits)
  be::big_uint16_buf_t total_length;  // IPv4 header + UDP + transport + ICRC, bytes
  be::big_uint16_buf_t identification;
  be::big_uint16_buf_t flags_fragment;  // DF (0x4000) set, MF clear, offset 0
  be::big_uint8_buf_t ttl;
  be::big_uint8_buf_t protocol;  // 17 (UDP)
  be::big_uint16_buf_t header_checksum;
  std::uint8_t src[4];
  std::uint8_t dst[4];
};
static_assert(sizeof(Ipv4Header) == 20);

struct UdpHeader {
  be::big_uint16_buf_t src_port;  // flow entropy; 4791 is the destination
  be::big_uint16_buf_t dst_port;
  be::big_uint16_buf_t length;    // UDP header + transport + ICRC, bytes
  be::big_uint16_buf_t checksum;  // 0: RoCEv2 relies on the ICRC (Annex A17.2.2)
};
static_assert(sizeof(UdpHeader) == 8);

// Base Transport Header (IBA 9.2).
struct Bth {
  be::big_uint8_buf_t opcode;
  be::big_uint8_buf_t flags;  // SE (bit 7), MigReq (bit 6), PadCnt (bits 5..4), TVer (3..0)
  be::big_uint16_buf_t pkey;
  be::big_uint8_buf_t fecn_becn;  // FECN (bit 7), BECN (bit 6), reserved (5..0)
  be::big_uint24_buf_t dest_qp;
  be::big_uint8_buf_t ack_request;  // AckReq (bit 7), reserved (6..0)
  be::big_uint24_buf_t psn;
};
static_assert(sizeof(Bth) == 12);

// RDMA Extended Transport Header (IBA 9.3.3): READ and WRITE requests.
struct Reth {
  be::big_uint64_buf_t virtual_address;
  be::big_uint32_buf_t rkey;
  be::big_uint32_buf_t dma_length;
};
static_assert(sizeof(Reth) == 16);

// ACK Extended Transport Header (IBA 9.3.5).
struct Aeth {
  be::big_uint8_buf_t syndrome;
  be::big_uint24_buf_t msn;
};
static_assert(sizeof(Aeth) == 4);

// Atomic Extended Transport Header (IBA 9.3.4).
struct AtomicEth {
  be::big_uint64_buf_t virtual_address;
  be::big_uint32_buf_t rkey;
  be::big_uint64_buf_t swap_add;  // FETCH_ADD: the addend; COMPARE_SWAP: the new value
  be::big_uint64_buf_t compare;   // COMPARE_SWAP: the expected value
};
static_assert(sizeof(AtomicEth) == 28);

// Atomic ACK Extended Transport Header (IBA 9.3.6).
struct AtomicAckEth {
  be::big_uint64_buf_t original;
};
static_assert(sizeof(AtomicAckEth) == 8);

// Immediate data (IBA 9.3.7).
struct ImmDt {
  be::big_uint32_buf_t data;
};
static_assert(sizeof(ImmDt) == 4);

inline constexpr std::size_t kIpv4Bytes = sizeof(Ipv4Header);
inline constexpr std::size_t kUdpBytes = sizeof(UdpHeader);
inline constexpr std::size_t kBthBytes = sizeof(Bth);
inline constexpr std::size_t kIcrcBytes = 4;
inline constexpr std::size_t kIpOffset = kEthernetHeaderBytes;     // 14
inline constexpr std::size_t kUdpOffset = kIpOffset + kIpv4Bytes;  // 34
inline constexpr std::size_t kBthOffset = kUdpOffset + kUdpBytes;  // 42
inline constexpr std::size_t kExtOffset = kBthOffset + kBthBytes;  // 54
// Frame bytes besides the extended headers and the payload: Ethernet .. BTH and the ICRC.
inline constexpr std::size_t kBaseOverheadBytes = kExtOffset + kIcrcBytes;  // 58

// BTH.flags bits.
inline constexpr std::uint8_t kBthSolicited = 0x80;
inline constexpr std::uint8_t kBthMigReq = 0x40;
inline constexpr unsigned kBthPadShift = 4;
inline constexpr std::uint8_t kBthTverMask = 0x0F;
inline constexpr std::uint8_t kBthAckReq = 0x80;
inline constexpr std::uint8_t kBthFecn = 0x80;
inline constexpr std::uint8_t kBthBecn = 0x40;
inline constexpr std::uint16_t kIpDontFragment = 0x4000;

// RC opcodes (IBA table 38: transport 000 = RC in bits 7..5).
enum class Opcode : std::uint8_t {
  kSendFirst = 0x00,
  kSendMiddle = 0x01,
  kSendLast = 0x02,
  kSendLastImm = 0x03,
  kSendOnly = 0x04,
  kSendOnlyImm = 0x05,
  kWriteFirst = 0x06,
  kWriteMiddle = 0x07,
  kWriteLast = 0x08,
  kWriteLastImm = 0x09,
  kWriteOnly = 0x0A,
  kWriteOnlyImm = 0x0B,
  kReadRequest = 0x0C,
  kReadResponseFirst = 0x0D,
  kReadResponseMiddle = 0x0E,
  kReadResponseLast = 0x0F,
  kReadResponseOnly = 0x10,
  kAcknowledge = 0x11,
  kAtomicAcknowledge = 0x12,
  kCompareSwap = 0x13,
  kFetchAdd = 0x14,
};

bool is_known_opcode(std::uint8_t value);
const char* to_string(Opcode opcode);

// Which extended headers an opcode carries, in wire order RETH/AtomicETH, ImmDt, AETH,
// AtomicAckETH (IBA table 38).
struct OpcodeLayout {
  bool reth = false;
  bool atomic_eth = false;
  bool imm = false;
  bool aeth = false;
  bool atomic_ack_eth = false;
  bool payload = false;  // may carry payload
  std::size_t ext_bytes() const {
    return (reth ? sizeof(Reth) : 0) + (atomic_eth ? sizeof(AtomicEth) : 0) +
           (imm ? sizeof(ImmDt) : 0) + (aeth ? sizeof(Aeth) : 0) +
           (atomic_ack_eth ? sizeof(AtomicAckEth) : 0);
  }
};
OpcodeLayout layout_of(Opcode opcode);

// Classification used by the queue pairs.
bool is_request(Opcode opcode);  // SEND, WRITE, READ request, atomics
bool is_send(Opcode opcode);
bool is_write(Opcode opcode);
bool is_read_response(Opcode opcode);
bool is_atomic(Opcode opcode);
bool is_first_or_only(Opcode opcode);  // starts a message
bool is_last_or_only(Opcode opcode);   // ends a message (READ request and atomics included)

// AETH syndrome (IBA 9.7.5.1.2): bits 7..5 select ACK / RNR NAK / NAK, bits 4..0 the value.
enum class AethKind : std::uint8_t { kAck = 0, kRnrNak = 1, kNak = 3 };
enum class NakCode : std::uint8_t {
  kPsnSequenceError = 0,
  kInvalidRequest = 1,
  kRemoteAccessError = 2,
  kRemoteOperationalError = 3,
};
inline constexpr std::uint8_t kAckCreditsInvalid = 0x1F;  // no end-to-end credits advertised
constexpr std::uint8_t make_syndrome(AethKind kind, std::uint8_t value) {
  return static_cast<std::uint8_t>((static_cast<unsigned>(kind) << 5) | (value & 0x1F));
}
constexpr AethKind syndrome_kind(std::uint8_t syndrome) {
  return static_cast<AethKind>(syndrome >> 5);
}
constexpr std::uint8_t syndrome_value(std::uint8_t syndrome) {
  return syndrome & 0x1F;
}
// RNR NAK timer code to nanoseconds (IBA table 45); code 0 is the longest (655.36 ms).
std::uint64_t rnr_timer_ns(std::uint8_t code);

// ---- 24-bit packet sequence numbers (serial arithmetic, IBA 9.7.1) --------------------------

inline constexpr std::uint32_t kPsnMask = 0xFFFFFF;
constexpr std::uint32_t psn_add(std::uint32_t psn, std::int64_t delta) {
  return static_cast<std::uint32_t>(static_cast<std::int64_t>(psn) + delta) & kPsnMask;
}
// a - b as a signed distance in [-2^23, 2^23): negative means a is before b.
constexpr std::int32_t psn_diff(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(((a - b) & kPsnMask) << 8) >> 8;
}

// ---- Decoding ------------------------------------------------------------------------------

enum class DecodeError : std::uint8_t {
  kOk = 0,
  kTruncatedEthernet,    // shorter than an Ethernet header
  kNotIpv4,              // EtherType is not 0x0800
  kTruncatedIp,          // no room for the IPv4 header, or total_length past the frame
  kBadIpHeader,          // version is not 4, IHL is not 5 (options are not used by RoCEv2)
  kBadIpChecksum,        // IPv4 header checksum mismatch
  kFragmented,           // MF set or fragment offset non-zero
  kNotUdp,               // IP protocol is not 17
  kNotRoce,              // UDP destination port is not 4791
  kBadUdpLength,         // UDP length disagrees with the IPv4 total length
  kBadUdpChecksum,       // non-zero UDP checksum that does not verify
  kTruncatedBth,         // no room for BTH + ICRC
  kBadTransportVersion,  // BTH TVer is not 0
  kUnknownOpcode,        // not an RC opcode this engine implements
  kTruncatedHeaders,     // the opcode's extended headers run past the packet
  kBadPadding,           // pad count larger than the payload, or payload+pad not 4-aligned
  kUnexpectedPayload,    // payload on an opcode that carries none
  kBadIcrc,              // invariant CRC mismatch
};
inline constexpr std::size_t kDecodeErrorCount = 18;
const char* to_string(DecodeError error);

struct PacketView {
  MacAddr dst_mac;
  MacAddr src_mac;
  std::uint32_t src_ip = 0;  // host order
  std::uint32_t dst_ip = 0;
  std::uint8_t dscp = 0;
  std::uint8_t ecn = 0;
  std::uint8_t ttl = 0;
  std::uint16_t udp_src_port = 0;
  Opcode opcode{};
  bool solicited = false;
  bool ack_request = false;
  bool fecn = false;
  bool becn = false;
  std::uint8_t pad_bytes = 0;
  std::uint16_t pkey = 0;
  std::uint32_t dest_qp = 0;
  std::uint32_t psn = 0;
  std::optional<Reth> reth;
  std::optional<AtomicEth> atomic_eth;
  std::optional<std::uint32_t> imm;
  std::optional<Aeth> aeth;
  std::optional<std::uint64_t> atomic_original;
  std::span<const std::byte> payload;  // without the pad bytes
};

// Whether decode_packet recomputes the ICRC. kSkip is for a reader that only looks at the
// headers of a packet its receiver will check in full (the simulator's NIC model).
enum class Icrc : std::uint8_t { kCheck, kSkip };

// Validates the whole packet (Ethernet, IPv4 incl. checksum, UDP, BTH, extended headers,
// padding, ICRC unless skipped) and fills `out`. Bytes after the IPv4 total length (Ethernet
// padding) are ignored. Never reads outside `frame`.
DecodeError decode_packet(std::span<const std::byte> frame, PacketView& out,
                          Icrc icrc_check = Icrc::kCheck);

// ---- Encoding ------------------------------------------------------------------------------

struct PacketAddress {
  MacAddr dst_mac;
  MacAddr src_mac;
  std::uint32_t src_ip = 0;  // host order
  std::uint32_t dst_ip = 0;
  std::uint8_t dscp = 0;
  std::uint8_t ecn = 0;
  std::uint8_t ttl = 64;
  std::uint16_t identification = 0;
  std::uint16_t udp_src_port = 0xC000;
};

struct PacketFields {
  Opcode opcode{};
  bool solicited = false;
  bool ack_request = false;
  bool becn = false;
  std::uint16_t pkey = kDefaultPkey;
  std::uint32_t dest_qp = 0;  // 24 bits
  std::uint32_t psn = 0;      // 24 bits
  // Extended headers; the encoder writes the ones layout_of(opcode) names.
  std::uint64_t virtual_address = 0;  // RETH / AtomicETH
  std::uint32_t rkey = 0;             // RETH / AtomicETH
  std::uint32_t dma_length = 0;       // RETH
  std::uint64_t swap_add = 0;         // AtomicETH
  std::uint64_t compare = 0;          // AtomicETH
  std::uint32_t imm = 0;              // ImmDt
  std::uint8_t syndrome = 0;          // AETH
  std::uint32_t msn = 0;              // AETH, 24 bits
  std::uint64_t atomic_original = 0;  // AtomicAckETH
};

// Bytes of the frame encode_packet builds for `opcode` with `payload_bytes`.
std::size_t frame_bytes(Opcode opcode, std::size_t payload_bytes);

// Builds a complete frame: IPv4 checksum and ICRC computed (left zero with Icrc::kSkip),
// payload padded to 4 bytes. Precondition: layout_of(opcode).payload || payload.empty().
// `buffer` is reused when given (Effects::take_spare): a runtime that lends its delivered
// frames back saves an allocation per packet.
Frame encode_packet(const PacketAddress& address, const PacketFields& fields,
                    std::span<const std::byte> payload, Frame buffer = {},
                    Icrc icrc_compute = Icrc::kCheck);

// The invariant CRC of an IPv4 RoCEv2 packet (Annex A17.3.3): CRC-32 (the Ethernet / IB VCRC
// polynomial 0x04C11DB7, reflected, initial value and final XOR all-ones) over 8 bytes of 0xFF
// standing for the missing LRH, the IPv4 header with TOS, TTL and header checksum set to
// all-ones, the UDP header with its checksum set to all-ones, the BTH with byte 4 (FECN, BECN,
// reserved) set to all-ones, and the rest of the packet up to the ICRC (payload and pad
// included). `ip_packet` starts at the IPv4 header and ends before the ICRC. The ICRC is sent
// least-significant byte first, as the Ethernet FCS is.
// Precondition: ip_packet.size() >= kIpv4Bytes + kUdpBytes + kBthBytes.
std::uint32_t icrc(std::span<const std::byte> ip_packet);

// RFC 1071 ones'-complement checksum of an IPv4 header whose checksum field is zero.
std::uint16_t ipv4_header_checksum(std::span<const std::byte> header);

// Wire cost of one packet: everything the link serializes (preamble, FCS, gap, padding).
std::size_t wire_bytes(std::size_t frame_bytes);

}  // namespace ethx::roce
