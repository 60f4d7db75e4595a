// libFuzzer target for the RoCEv2 decoder (packet-engine/roce/roce_wire.hpp), the second frame
// decoder the fabric carries. Input: one control byte, then one frame.
//
// Control bit 0 asks the harness to recompute the IPv4 header checksum and the ICRC before
// decoding: random mutations almost never keep both valid, so without the fix-up nearly every
// input would stop at the checksum and the BTH and extended-header parsers stay unexplored;
// with bit 0 clear the bytes go in untouched, so the rejection paths are fuzzed too.
//
// Invariants: the decoder never reads outside the frame (ASan) and returns a known error; an
// accepted packet's payload lies inside the frame; and re-encoding what it decoded with the
// engine's encoder gives a packet that decodes to the same fields and payload.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "packet-engine/roce/roce_wire.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace ethx;

roce::Frame fixed_up(std::span<const std::byte> bytes) {
  roce::Frame frame(bytes.begin(), bytes.end());
  if (frame.size() < roce::kBaseOverheadBytes) return frame;
  // IPv4 header checksum over bytes 14..33 with the checksum field (24..25) zeroed.
  frame[roce::kIpOffset + 10] = std::byte{0};
  frame[roce::kIpOffset + 11] = std::byte{0};
  const std::uint16_t checksum = roce::ipv4_header_checksum(
      std::span<const std::byte>(frame).subspan(roce::kIpOffset, roce::kIpv4Bytes));
  frame[roce::kIpOffset + 10] = static_cast<std::byte>(checksum >> 8);
  frame[roce::kIpOffset + 11] = static_cast<std::byte>(checksum & 0xFF);
  // The ICRC covers the IP packet up to the last four bytes, sent least-significant first.
  const std::size_t icrc_at = frame.size() - roce::kIcrcBytes;
  const std::uint32_t crc = roce::icrc(
      std::span<const std::byte>(frame).subspan(roce::kIpOffset, icrc_at - roce::kIpOffset));
  for (std::size_t i = 0; i < roce::kIcrcBytes; ++i) {
    frame[icrc_at + i] = static_cast<std::byte>(crc >> (8 * i));
  }
  return frame;
}

roce::PacketFields fields_of(const roce::PacketView& view) {
  roce::PacketFields fields;
  fields.opcode = view.opcode;
  fields.solicited = view.solicited;
  fields.ack_request = view.ack_request;
  fields.becn = view.becn;
  fields.pkey = view.pkey;
  fields.dest_qp = view.dest_qp;
  fields.psn = view.psn;
  if (view.reth) {
    fields.virtual_address = view.reth->virtual_address.value();
    fields.rkey = view.reth->rkey.value();
    fields.dma_length = view.reth->dma_length.value();
  }
  if (view.atomic_eth) {
    fields.virtual_address = view.atomic_eth->virtual_address.value();
    fields.rkey = view.atomic_eth->rkey.value();
    fields.swap_add = view.atomic_eth->swap_add.value();
    fields.compare = view.atomic_eth->compare.value();
  }
  if (view.imm) fields.imm = *view.imm;
  if (view.aeth) {
    fields.syndrome = view.aeth->syndrome.value();
    fields.msn = view.aeth->msn.value();
  }
  if (view.atomic_original) fields.atomic_original = *view.atomic_original;
  return fields;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto bytes = std::span(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
  const roce::Frame frame =
      (data[0] & 1) != 0 ? fixed_up(bytes) : roce::Frame(bytes.begin(), bytes.end());

  roce::PacketView view;
  const roce::DecodeError error = roce::decode_packet(frame, view);
  ETHX_FUZZ_CHECK(static_cast<std::size_t>(error) < roce::kDecodeErrorCount);
  if (error != roce::DecodeError::kOk) return 0;
  ETHX_FUZZ_CHECK(view.payload.empty() ||
                  (view.payload.data() >= frame.data() &&
                   view.payload.data() + view.payload.size() <= frame.data() + frame.size()));
  ETHX_FUZZ_CHECK(roce::layout_of(view.opcode).payload || view.payload.empty());

  roce::PacketAddress address{view.dst_mac, view.src_mac, view.src_ip, view.dst_ip,      view.dscp,
                              view.ecn,     view.ttl,     0,           view.udp_src_port};
  const roce::Frame again = roce::encode_packet(address, fields_of(view), view.payload);
  roce::PacketView reread;
  ETHX_FUZZ_CHECK(roce::decode_packet(again, reread) == roce::DecodeError::kOk);
  ETHX_FUZZ_CHECK(reread.opcode == view.opcode && reread.psn == view.psn &&
                  reread.dest_qp == view.dest_qp && reread.pkey == view.pkey &&
                  reread.src_ip == view.src_ip && reread.dst_ip == view.dst_ip);
  ETHX_FUZZ_CHECK(std::equal(reread.payload.begin(), reread.payload.end(), view.payload.begin(),
                             view.payload.end()));
  return 0;
}
