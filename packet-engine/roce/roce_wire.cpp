#include "packet-engine/roce/roce_wire.hpp"

#include <zlib.h>
#include <algorithm>
#include <array>
#include <cstring>

#include "packet-engine/packed_bytes.hpp"

namespace ethx::roce {
namespace {

using packed::load;
using packed::store;
using packed::to_mac;

std::uint32_t to_ip(const std::uint8_t (&octets)[4]) {
  return (std::uint32_t{octets[0]} << 24) | (std::uint32_t{octets[1]} << 16) |
         (std::uint32_t{octets[2]} << 8) | std::uint32_t{octets[3]};
}

void put_ip(std::uint8_t (&octets)[4], std::uint32_t ip) {
  for (int i = 0; i < 4; ++i) octets[i] = static_cast<std::uint8_t>(ip >> (24 - 8 * i));
}

// Ones'-complement sum of big-endian 16-bit words (RFC 1071), not yet folded or inverted.
std::uint32_t ones_sum(std::span<const std::byte> bytes, std::uint32_t sum) {
  std::size_t i = 0;
  for (; i + 1 < bytes.size(); i += 2) {
    sum += (std::to_integer<std::uint32_t>(bytes[i]) << 8) |
           std::to_integer<std::uint32_t>(bytes[i + 1]);
  }
  if (i < bytes.size()) sum += std::to_integer<std::uint32_t>(bytes[i]) << 8;
  return sum;
}

std::uint16_t fold(std::uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum & 0xFFFF);
}

// UDP checksum over the IPv4 pseudo-header and the UDP datagram (RFC 768); `udp` includes the
// UDP header with its checksum field as carried.
std::uint16_t udp_checksum(std::uint32_t src_ip, std::uint32_t dst_ip,
                           std::span<const std::byte> udp) {
  std::uint32_t sum = (src_ip >> 16) + (src_ip & 0xFFFF) + (dst_ip >> 16) + (dst_ip & 0xFFFF) +
                      kIpProtocolUdp + static_cast<std::uint32_t>(udp.size());
  return fold(ones_sum(udp, sum));
}

}  // namespace

bool is_known_opcode(std::uint8_t value) {
  return value <= static_cast<std::uint8_t>(Opcode::kFetchAdd);
}

const char* to_string(Opcode opcode) {
  switch (opcode) {
    case Opcode::kSendFirst:
      return "SEND_FIRST";
    case Opcode::kSendMiddle:
      return "SEND_MIDDLE";
    case Opcode::kSendLast:
      return "SEND_LAST";
    case Opcode::kSendLastImm:
      return "SEND_LAST_WITH_IMMEDIATE";
    case Opcode::kSendOnly:
      return "SEND_ONLY";
    case Opcode::kSendOnlyImm:
      return "SEND_ONLY_WITH_IMMEDIATE";
    case Opcode::kWriteFirst:
      return "RDMA_WRITE_FIRST";
    case Opcode::kWriteMiddle:
      return "RDMA_WRITE_MIDDLE";
    case Opcode::kWriteLast:
      return "RDMA_WRITE_LAST";
    case Opcode::kWriteLastImm:
      return "RDMA_WRITE_LAST_WITH_IMMEDIATE";
    case Opcode::kWriteOnly:
      return "RDMA_WRITE_ONLY";
    case Opcode::kWriteOnlyImm:
      return "RDMA_WRITE_ONLY_WITH_IMMEDIATE";
    case Opcode::kReadRequest:
      return "RDMA_READ_REQUEST";
    case Opcode::kReadResponseFirst:
      return "RDMA_READ_RESPONSE_FIRST";
    case Opcode::kReadResponseMiddle:
      return "RDMA_READ_RESPONSE_MIDDLE";
    case Opcode::kReadResponseLast:
      return "RDMA_READ_RESPONSE_LAST";
    case Opcode::kReadResponseOnly:
      return "RDMA_READ_RESPONSE_ONLY";
    case Opcode::kAcknowledge:
      return "ACKNOWLEDGE";
    case Opcode::kAtomicAcknowledge:
      return "ATOMIC_ACKNOWLEDGE";
    case Opcode::kCompareSwap:
      return "COMPARE_SWAP";
    case Opcode::kFetchAdd:
      return "FETCH_ADD";
  }
  return "unknown";
}

OpcodeLayout layout_of(Opcode opcode) {
  OpcodeLayout l;
  switch (opcode) {
    case Opcode::kSendFirst:
    case Opcode::kSendMiddle:
    case Opcode::kSendLast:
    case Opcode::kSendOnly:
    case Opcode::kWriteMiddle:
    case Opcode::kWriteLast:
    case Opcode::kReadResponseMiddle:
      l.payload = true;
      break;
    case Opcode::kSendLastImm:
    case Opcode::kSendOnlyImm:
    case Opcode::kWriteLastImm:
      l.imm = true;
      l.payload = true;
      break;
    case Opcode::kWriteFirst:
    case Opcode::kWriteOnly:
      l.reth = true;
      l.payload = true;
      break;
    case Opcode::kWriteOnlyImm:
      l.reth = true;
      l.imm = true;
      l.payload = true;
      break;
    case Opcode::kReadRequest:
      l.reth = true;
      break;
    case Opcode::kReadResponseFirst:
    case Opcode::kReadResponseLast:
    case Opcode::kReadResponseOnly:
      l.aeth = true;
      l.payload = true;
      break;
    case Opcode::kAcknowledge:
      l.aeth = true;
      break;
    case Opcode::kAtomicAcknowledge:
      l.aeth = true;
      l.atomic_ack_eth = true;
      break;
    case Opcode::kCompareSwap:
    case Opcode::kFetchAdd:
      l.atomic_eth = true;
      break;
  }
  return l;
}

bool is_send(Opcode opcode) {
  return opcode <= Opcode::kSendOnlyImm;
}
bool is_write(Opcode opcode) {
  return opcode >= Opcode::kWriteFirst && opcode <= Opcode::kWriteOnlyImm;
}
bool is_read_response(Opcode opcode) {
  return opcode >= Opcode::kReadResponseFirst && opcode <= Opcode::kReadResponseOnly;
}
bool is_atomic(Opcode opcode) {
  return opcode == Opcode::kCompareSwap || opcode == Opcode::kFetchAdd;
}
bool is_request(Opcode opcode) {
  return is_send(opcode) || is_write(opcode) || opcode == Opcode::kReadRequest || is_atomic(opcode);
}
bool is_first_or_only(Opcode opcode) {
  switch (opcode) {
    case Opcode::kSendFirst:
    case Opcode::kSendOnly:
    case Opcode::kSendOnlyImm:
    case Opcode::kWriteFirst:
    case Opcode::kWriteOnly:
    case Opcode::kWriteOnlyImm:
    case Opcode::kReadRequest:
    case Opcode::kReadResponseFirst:
    case Opcode::kReadResponseOnly:
    case Opcode::kCompareSwap:
    case Opcode::kFetchAdd:
      return true;
    default:
      return false;
  }
}
bool is_last_or_only(Opcode opcode) {
  switch (opcode) {
    case Opcode::kSendLast:
    case Opcode::kSendLastImm:
    case Opcode::kSendOnly:
    case Opcode::kSendOnlyImm:
    case Opcode::kWriteLast:
    case Opcode::kWriteLastImm:
    case Opcode::kWriteOnly:
    case Opcode::kWriteOnlyImm:
    case Opcode::kReadRequest:
    case Opcode::kReadResponseLast:
    case Opcode::kReadResponseOnly:
    case Opcode::kCompareSwap:
    case Opcode::kFetchAdd:
      return true;
    default:
      return false;
  }
}

std::uint64_t rnr_timer_ns(std::uint8_t code) {
  // IBA table 45, in microseconds x 100 (so 0.01 ms is 1).
  static constexpr std::array<std::uint32_t, 32> kTimer10us = {
      65536, 1,    2,    3,    4,    6,     8,     12,    16,    24,   32,
      48,    64,   96,   128,  192,  256,   384,   512,   768,   1024, 1536,
      2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};
  return std::uint64_t{kTimer10us[code & 0x1F]} * 10'000;
}

const char* to_string(DecodeError error) {
  switch (error) {
    case DecodeError::kOk:
      return "ok";
    case DecodeError::kTruncatedEthernet:
      return "truncated-ethernet";
    case DecodeError::kNotIpv4:
      return "not-ipv4";
    case DecodeError::kTruncatedIp:
      return "truncated-ip";
    case DecodeError::kBadIpHeader:
      return "bad-ip-header";
    case DecodeError::kBadIpChecksum:
      return "bad-ip-checksum";
    case DecodeError::kFragmented:
      return "fragmented";
    case DecodeError::kNotUdp:
      return "not-udp";
    case DecodeError::kNotRoce:
      return "not-roce";
    case DecodeError::kBadUdpLength:
      return "bad-udp-length";
    case DecodeError::kBadUdpChecksum:
      return "bad-udp-checksum";
    case DecodeError::kTruncatedBth:
      return "truncated-bth";
    case DecodeError::kBadTransportVersion:
      return "bad-transport-version";
    case DecodeError::kUnknownOpcode:
      return "unknown-opcode";
    case DecodeError::kTruncatedHeaders:
      return "truncated-headers";
    case DecodeError::kBadPadding:
      return "bad-padding";
    case DecodeError::kUnexpectedPayload:
      return "unexpected-payload";
    case DecodeError::kBadIcrc:
      return "bad-icrc";
  }
  return "unknown";
}

std::uint16_t ipv4_header_checksum(std::span<const std::byte> header) {
  return fold(ones_sum(header, 0));
}

std::uint32_t icrc(std::span<const std::byte> ip_packet) {
  // Copy the variant-field-bearing headers and mask them; the rest is hashed in place.
  constexpr std::size_t kMasked = kIpv4Bytes + kUdpBytes + kBthBytes;
  std::array<std::byte, 8 + kMasked> head;
  std::fill_n(head.begin(), 8, std::byte{0xFF});  // the LRH RoCEv2 does not carry
  std::memcpy(head.data() + 8, ip_packet.data(), kMasked);
  std::byte* ip = head.data() + 8;
  ip[1] = std::byte{0xFF};            // TOS: DSCP and ECN may change hop by hop
  ip[8] = std::byte{0xFF};            // TTL
  ip[10] = ip[11] = std::byte{0xFF};  // header checksum follows TTL and ECN
  ip[kIpv4Bytes + 6] = ip[kIpv4Bytes + 7] = std::byte{0xFF};  // UDP checksum
  ip[kIpv4Bytes + kUdpBytes + 4] = std::byte{0xFF};  // BTH FECN, BECN, resv6 (switches mark)
  // zlib's CRC-32 is the ICRC's (IEEE 802.3 polynomial, reflected, inverted in and out) and
  // processes words at a time: Boost's byte-wise table took 43 % of an `ethx sim --engine
  // roce` run.
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(head.data()), static_cast<uInt>(head.size()));
  crc = crc32(crc, reinterpret_cast<const Bytef*>(ip_packet.data() + kMasked),
              static_cast<uInt>(ip_packet.size() - kMasked));
  return static_cast<std::uint32_t>(crc);
}

std::size_t frame_bytes(Opcode opcode, std::size_t payload_bytes) {
  const std::size_t padded = (payload_bytes + 3) / 4 * 4;
  return kBaseOverheadBytes + layout_of(opcode).ext_bytes() + padded;
}

std::size_t wire_bytes(std::size_t frame_bytes) {
  // Ethernet pads to 60 B and adds preamble+SFD 8, FCS 4 and the inter-frame gap 12 (802.3).
  return std::max<std::size_t>(frame_bytes, 60) + 24;
}

namespace {

// ---- encode_packet's steps: one header each, in wire order ----

void store_ethernet(std::span<std::byte> out, const PacketAddress& address) {
  EthernetHeader eth;
  std::copy(address.dst_mac.octets.begin(), address.dst_mac.octets.end(), eth.dst);
  std::copy(address.src_mac.octets.begin(), address.src_mac.octets.end(), eth.src);
  eth.ether_type = kEtherTypeIpv4;
  store(out, 0, eth);
}

void store_ipv4(std::span<std::byte> out, const PacketAddress& address, std::size_t frame_bytes) {
  Ipv4Header ip;
  ip.version_ihl = 0x45;
  ip.tos = static_cast<std::uint8_t>((address.dscp << 2) | (address.ecn & 0x3));
  ip.total_length = static_cast<std::uint16_t>(frame_bytes - kEthernetHeaderBytes);
  ip.identification = address.identification;
  ip.flags_fragment = kIpDontFragment;
  ip.ttl = address.ttl;
  ip.protocol = kIpProtocolUdp;
  ip.header_checksum = 0;
  put_ip(ip.src, address.src_ip);
  put_ip(ip.dst, address.dst_ip);
  store(out, kIpOffset, ip);
  ip.header_checksum = ipv4_header_checksum(out.subspan(kIpOffset, kIpv4Bytes));
  store(out, kIpOffset, ip);
}

void store_udp(std::span<std::byte> out, const PacketAddress& address, std::size_t frame_bytes) {
  UdpHeader udp;
  udp.src_port = address.udp_src_port;
  udp.dst_port = kUdpPortRoceV2;
  udp.length = static_cast<std::uint16_t>(frame_bytes - kUdpOffset);
  udp.checksum = 0;
  store(out, kUdpOffset, udp);
}

void store_bth(std::span<std::byte> out, const PacketFields& fields, std::size_t pad_bytes) {
  Bth bth;
  bth.opcode = static_cast<std::uint8_t>(fields.opcode);
  bth.flags = static_cast<std::uint8_t>((fields.solicited ? kBthSolicited : 0) |
                                        (pad_bytes << kBthPadShift));  // TVer 0
  bth.pkey = fields.pkey;
  bth.fecn_becn = fields.becn ? kBthBecn : 0;
  bth.dest_qp = fields.dest_qp & kPsnMask;
  bth.ack_request = fields.ack_request ? kBthAckReq : 0;
  bth.psn = fields.psn & kPsnMask;
  store(out, kBthOffset, bth);
}

// The extended headers `layout` names, in wire order; returns the offset after them.
std::size_t store_extension_headers(std::span<std::byte> out, const OpcodeLayout& layout,
                                    const PacketFields& fields) {
  std::size_t at = kExtOffset;
  if (layout.reth) {
    Reth reth;
    reth.virtual_address = fields.virtual_address;
    reth.rkey = fields.rkey;
    reth.dma_length = fields.dma_length;
    store(out, at, reth);
    at += sizeof(Reth);
  }
  if (layout.atomic_eth) {
    AtomicEth atomic;
    atomic.virtual_address = fields.virtual_address;
    atomic.rkey = fields.rkey;
    atomic.swap_add = fields.swap_add;
    atomic.compare = fields.compare;
    store(out, at, atomic);
    at += sizeof(AtomicEth);
  }
  if (layout.imm) {
    ImmDt imm;
    imm.data = fields.imm;
    store(out, at, imm);
    at += sizeof(ImmDt);
  }
  if (layout.aeth) {
    Aeth aeth;
    aeth.syndrome = fields.syndrome;
    aeth.msn = fields.msn & kPsnMask;
    store(out, at, aeth);
    at += sizeof(Aeth);
  }
  if (layout.atomic_ack_eth) {
    AtomicAckEth ack;
    ack.original = fields.atomic_original;
    store(out, at, ack);
    at += sizeof(AtomicAckEth);
  }
  return at;
}

}  // namespace

Frame encode_packet(const PacketAddress& address, const PacketFields& fields,
                    std::span<const std::byte> payload, Frame buffer, Icrc icrc_compute) {
  const OpcodeLayout layout = layout_of(fields.opcode);
  const std::size_t pad = (4 - payload.size() % 4) % 4;
  const std::size_t total = frame_bytes(fields.opcode, payload.size());
  Frame frame = std::move(buffer);
  frame.assign(total, std::byte{0});  // pad bytes and reserved fields are zero
  const std::span<std::byte> out(frame);
  store_ethernet(out, address);
  store_ipv4(out, address, total);
  store_udp(out, address, total);
  store_bth(out, fields, pad);
  std::size_t at = store_extension_headers(out, layout, fields);
  if (!payload.empty()) std::memcpy(frame.data() + at, payload.data(), payload.size());
  at += payload.size() + pad;  // pad bytes stay zero

  if (icrc_compute == Icrc::kSkip) return frame;  // the ICRC's bytes stay zero
  const std::uint32_t crc = icrc(out.subspan(kIpOffset, at - kIpOffset));
  be::little_uint32_buf_t wire_crc(crc);  // least-significant byte first, like the FCS
  store(out, at, wire_crc);
  return frame;
}

namespace {

// ---- decode_packet's steps: the checks of each layer, in the order they always ran, on the
// headers decode_packet loaded once (copies of the packed headers through the stack, one per
// step, made decoding a fifth slower) ----

DecodeError check_ipv4(std::span<const std::byte> frame, const Ipv4Header& ip) {
  if (ip.version_ihl.value() != 0x45) return DecodeError::kBadIpHeader;
  if (ipv4_header_checksum(frame.subspan(kIpOffset, kIpv4Bytes)) != 0) {
    return DecodeError::kBadIpChecksum;
  }
  const std::size_t ip_total = ip.total_length.value();
  if (ip_total < kIpv4Bytes || frame.size() - kIpOffset < ip_total) {
    return DecodeError::kTruncatedIp;
  }
  if ((ip.flags_fragment.value() & 0x3FFF) != 0) return DecodeError::kFragmented;
  if (ip.protocol.value() != kIpProtocolUdp) return DecodeError::kNotUdp;
  if (ip_total < kIpv4Bytes + kUdpBytes) return DecodeError::kTruncatedIp;
  return DecodeError::kOk;
}

DecodeError check_udp(std::span<const std::byte> frame, const Ipv4Header& ip,
                      const UdpHeader& udp) {
  if (udp.dst_port.value() != kUdpPortRoceV2) return DecodeError::kNotRoce;
  const std::size_t udp_bytes = ip.total_length.value() - kIpv4Bytes;
  if (udp.length.value() != udp_bytes) return DecodeError::kBadUdpLength;
  // Zero means "not computed" (RoCEv2 senders normally leave it so); otherwise it must verify.
  if (udp.checksum.value() != 0 &&
      udp_checksum(to_ip(ip.src), to_ip(ip.dst), frame.subspan(kUdpOffset, udp_bytes)) != 0) {
    return DecodeError::kBadUdpChecksum;
  }
  return DecodeError::kOk;
}

// Where the opcode's extended headers end and how much payload and pad follow them.
struct BthLayout {
  DecodeError error = DecodeError::kOk;
  OpcodeLayout layout{};
  std::size_t pad_bytes = 0;
  std::size_t payload_and_pad_bytes = 0;  // between the extended headers and the ICRC
};

// The BTH's version and opcode, and whether the opcode's extended headers, payload and pad fit
// the packet.
BthLayout check_bth(const Bth& bth, std::size_t ip_total) {
  const std::uint8_t flags = bth.flags.value();
  if ((flags & kBthTverMask) != 0) return {DecodeError::kBadTransportVersion};
  if (!is_known_opcode(bth.opcode.value())) return {DecodeError::kUnknownOpcode};
  const OpcodeLayout layout = layout_of(static_cast<Opcode>(bth.opcode.value()));
  const std::size_t end = kIpOffset + ip_total;  // first byte after the ICRC
  const std::size_t ext_end = kExtOffset + layout.ext_bytes();
  if (ext_end + kIcrcBytes > end) return {DecodeError::kTruncatedHeaders};
  const std::size_t payload_and_pad = end - kIcrcBytes - ext_end;
  const std::size_t pad = (flags >> kBthPadShift) & 0x3;
  if (pad > payload_and_pad || payload_and_pad % 4 != 0) return {DecodeError::kBadPadding};
  if (!layout.payload && payload_and_pad != 0) return {DecodeError::kUnexpectedPayload};
  return {DecodeError::kOk, layout, pad, payload_and_pad};
}

DecodeError check_icrc(std::span<const std::byte> frame, std::size_t ip_total) {
  const std::size_t end = kIpOffset + ip_total;  // first byte after the ICRC
  const auto carried = load<be::little_uint32_buf_t>(frame, end - kIcrcBytes).value();
  return icrc(frame.subspan(kIpOffset, ip_total - kIcrcBytes)) == carried ? DecodeError::kOk
                                                                          : DecodeError::kBadIcrc;
}

// The view's fields from the fixed headers (Ethernet, IPv4, UDP, BTH) of a checked packet.
void view_fixed_headers(const EthernetHeader& eth, const Ipv4Header& ip, const UdpHeader& udp,
                        const Bth& bth, PacketView& out) {
  const std::uint8_t flags = bth.flags.value();
  out.dst_mac = to_mac(eth.dst);
  out.src_mac = to_mac(eth.src);
  out.src_ip = to_ip(ip.src);
  out.dst_ip = to_ip(ip.dst);
  out.dscp = ip.tos.value() >> 2;
  out.ecn = ip.tos.value() & 0x3;
  out.ttl = ip.ttl.value();
  out.udp_src_port = udp.src_port.value();
  out.opcode = static_cast<Opcode>(bth.opcode.value());
  out.solicited = (flags & kBthSolicited) != 0;
  out.pad_bytes = static_cast<std::uint8_t>((flags >> kBthPadShift) & 0x3);
  out.pkey = bth.pkey.value();
  out.fecn = (bth.fecn_becn.value() & kBthFecn) != 0;
  out.becn = (bth.fecn_becn.value() & kBthBecn) != 0;
  out.dest_qp = bth.dest_qp.value();
  out.ack_request = (bth.ack_request.value() & kBthAckReq) != 0;
  out.psn = bth.psn.value();
}

// The view's extended headers, those `layout` names (the others reset); returns the offset
// after them, where the payload starts.
std::size_t view_extension_headers(std::span<const std::byte> frame, const OpcodeLayout& layout,
                                   PacketView& out) {
  out.reth.reset();
  out.atomic_eth.reset();
  out.imm.reset();
  out.aeth.reset();
  out.atomic_original.reset();
  std::size_t at = kExtOffset;
  if (layout.reth) {
    out.reth = load<Reth>(frame, at);
    at += sizeof(Reth);
  }
  if (layout.atomic_eth) {
    out.atomic_eth = load<AtomicEth>(frame, at);
    at += sizeof(AtomicEth);
  }
  if (layout.imm) {
    out.imm = load<ImmDt>(frame, at).data.value();
    at += sizeof(ImmDt);
  }
  if (layout.aeth) {
    out.aeth = load<Aeth>(frame, at);
    at += sizeof(Aeth);
  }
  if (layout.atomic_ack_eth) {
    out.atomic_original = load<AtomicAckEth>(frame, at).original.value();
    at += sizeof(AtomicAckEth);
  }
  return at;
}

}  // namespace

DecodeError decode_packet(std::span<const std::byte> frame, PacketView& out, Icrc icrc_check) {
  if (frame.size() < kEthernetHeaderBytes) return DecodeError::kTruncatedEthernet;
  const auto eth = load<EthernetHeader>(frame, 0);
  if (eth.ether_type.value() != kEtherTypeIpv4) return DecodeError::kNotIpv4;
  if (frame.size() < kIpOffset + kIpv4Bytes) return DecodeError::kTruncatedIp;
  const auto ip = load<Ipv4Header>(frame, kIpOffset);
  if (const DecodeError error = check_ipv4(frame, ip); error != DecodeError::kOk) return error;
  const std::size_t ip_total = ip.total_length.value();
  const auto udp = load<UdpHeader>(frame, kUdpOffset);  // check_ipv4: ip_total covers it
  if (const DecodeError error = check_udp(frame, ip, udp); error != DecodeError::kOk) {
    return error;
  }
  if (ip_total - kIpv4Bytes < kUdpBytes + kBthBytes + kIcrcBytes) {
    return DecodeError::kTruncatedBth;
  }
  const auto bth = load<Bth>(frame, kBthOffset);
  const BthLayout layout = check_bth(bth, ip_total);
  if (layout.error != DecodeError::kOk) return layout.error;
  if (icrc_check == Icrc::kCheck) {
    if (const DecodeError error = check_icrc(frame, ip_total); error != DecodeError::kOk) {
      return error;
    }
  }
  view_fixed_headers(eth, ip, udp, bth, out);
  const std::size_t payload_at = view_extension_headers(frame, layout.layout, out);
  out.payload = frame.subspan(payload_at, layout.payload_and_pad_bytes - layout.pad_bytes);
  return DecodeError::kOk;
}

}  // namespace ethx::roce
