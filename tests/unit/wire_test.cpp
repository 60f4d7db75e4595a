#include "packet-engine/wire.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string_view>
#include <vector>

#include "packet-engine/mac_addr.hpp"

namespace ethx::wire {
namespace {

using Bytes = std::vector<std::byte>;

Bytes pattern_bytes(std::size_t count, unsigned seed) {
  Bytes out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<std::byte>((i * 131 + seed) & 0xFF);
  return out;
}

Bytes text_bytes(std::string_view text) {
  Bytes out;
  for (char c : text) out.push_back(static_cast<std::byte>(c));
  return out;
}

// Appends `value` as `width` big-endian bytes.
void put_be(Bytes& out, std::uint64_t value, std::size_t width) {
  for (std::size_t i = 0; i < width; ++i) {
    out.push_back(static_cast<std::byte>((value >> (8 * (width - 1 - i))) & 0xFF));
  }
}

std::uint64_t get_be(std::span<const std::byte> bytes, std::size_t offset, std::size_t width) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < width; ++i) {
    value = (value << 8) | std::to_integer<std::uint64_t>(bytes[offset + i]);
  }
  return value;
}

void set_be(std::span<std::byte> bytes, std::size_t offset, std::uint64_t value,
            std::size_t width) {
  for (std::size_t i = 0; i < width; ++i) {
    bytes[offset + i] = static_cast<std::byte>((value >> (8 * (width - 1 - i))) & 0xFF);
  }
}

// Recomputes the CRC of a frame whose body_bytes field is trustworthy. False if it is not.
bool fix_crc(Bytes& frame) {
  if (frame.size() < kBodyOffset) return false;
  const std::size_t body = get_be(frame, 22, 2);
  const std::size_t crc_offset = kBodyOffset + body;
  if (crc_offset + kCrcBytes > frame.size()) return false;
  set_be(frame, crc_offset, crc32c(std::span<const std::byte>(frame).first(crc_offset)), 4);
  return true;
}

// ---- Hand-built frames, byte by byte from the documented offsets. --------------------------

struct RawTxn {
  std::uint8_t opcode = static_cast<std::uint8_t>(Opcode::kWritePosted);
  std::uint8_t status = 0;
  std::uint16_t tag = 0x1234;
  std::uint16_t length = 4;
  std::optional<std::uint16_t> payload_bytes;  // default: payload.size()
  std::uint64_t address = 0x1122334455667788;
  Bytes payload = pattern_bytes(4, 9);

  void encode_into(Bytes& out) const {
    put_be(out, opcode, 1);
    put_be(out, status, 1);
    put_be(out, tag, 2);
    put_be(out, length, 2);
    put_be(out, payload_bytes.value_or(static_cast<std::uint16_t>(payload.size())), 2);
    put_be(out, address, 8);
    out.insert(out.end(), payload.begin(), payload.end());
  }
};

struct RawFrame {
  MacAddr dst = default_mac_for_gpu(2);
  MacAddr src = default_mac_for_gpu(1);
  std::uint16_t ether_type = kEtherTypeFabric;
  std::uint8_t version = kVersion;
  std::uint8_t flags = 0;
  std::uint16_t src_gpu = 1;
  std::uint16_t dst_gpu = 2;
  std::uint16_t partition = 7;
  std::optional<std::uint16_t> body_bytes;  // default: the body actually encoded
  std::optional<std::uint8_t> txn_count;    // default: txns.size()
  std::uint8_t credits = 0;
  std::uint32_t seq = 0;
  std::uint32_t ack = 0;
  std::uint32_t incarnation = 0;
  std::vector<RawTxn> txns{RawTxn{}};
  Bytes extra_body;  // raw bytes after the transactions, inside the body

  // The frame with a CRC-32C over bytes 0 .. end of the encoded body, so the CRC check passes
  // and decoding reaches whatever field a test broke.
  Bytes encode() const {
    Bytes body;
    for (const RawTxn& txn : txns) txn.encode_into(body);
    body.insert(body.end(), extra_body.begin(), extra_body.end());

    Bytes out;
    for (auto octet : dst.octets) put_be(out, octet, 1);
    for (auto octet : src.octets) put_be(out, octet, 1);
    put_be(out, ether_type, 2);
    put_be(out, version, 1);
    put_be(out, flags, 1);
    put_be(out, src_gpu, 2);
    put_be(out, dst_gpu, 2);
    put_be(out, partition, 2);
    put_be(out, body_bytes.value_or(static_cast<std::uint16_t>(body.size())), 2);
    put_be(out, txn_count.value_or(static_cast<std::uint8_t>(txns.size())), 1);
    put_be(out, credits, 1);
    put_be(out, seq, 4);
    put_be(out, ack, 4);
    put_be(out, incarnation, 4);
    out.insert(out.end(), body.begin(), body.end());
    put_be(out, crc32c(out), 4);
    return out;
  }
};

// decode_frame's verdict; validate_frame (the switch's check) must reach the same one, and
// the same source GPU, on every frame a test decodes this way.
DecodeError decode(const Bytes& frame) {
  FrameView view;
  const DecodeError error = decode_frame(frame, view);
  GpuId src_gpu = kInvalidGpu;
  EXPECT_EQ(validate_frame(frame, src_gpu), error);
  if (error == DecodeError::kOk) {
    EXPECT_EQ(src_gpu, view.src_gpu);
  }
  return error;
}

std::vector<TxnView> txns_of(const FrameView& view) {
  std::vector<TxnView> out;
  TxnCursor cursor(view);
  TxnView txn;
  while (cursor.next(txn)) out.push_back(txn);
  return out;
}

bool same_bytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

// ---- A transaction of every opcode, as the builder encodes it. ----------------------------

struct TxnSpec {
  TxnFields fields;
  Bytes payload;
};

std::vector<TxnSpec> one_txn_per_opcode() {
  return {
      {{Opcode::kReadReq, Status::kOk, 0x0001, 256, 0x1000}, {}},
      {{Opcode::kReadResp, Status::kOk, 0x1002, 24, 0x2000}, pattern_bytes(24, 1)},
      {{Opcode::kWritePosted, Status::kOk, 0, 64, 0xFFFF'FFFF'FFFF'FFC0}, pattern_bytes(64, 2)},
      {{Opcode::kWriteReq, Status::kOk, 0x2003, 3, 0x3001}, pattern_bytes(3, 3)},
      {{Opcode::kWriteAck, Status::kOk, 0x2003, 3, 0x3001}, {}},
      {{Opcode::kAtomicFetchAdd, Status::kOk, 0x3004, 8, 0x4000}, pattern_bytes(8, 4)},
      {{Opcode::kAtomicSwap, Status::kOk, 0x4005, 4, 0x4008}, pattern_bytes(4, 5)},
      {{Opcode::kAtomicCas, Status::kOk, 0x5006, 8, 0x4010}, pattern_bytes(16, 6)},
      {{Opcode::kAtomicResp, Status::kOk, 0x5006, 4, 0x4010}, pattern_bytes(4, 7)},
      {{Opcode::kFlushReq, Status::kOk, 0xF007, 0, 0}, {}},
      {{Opcode::kFlushResp, Status::kOk, 0xF007, 0, 0}, {}},
      {{Opcode::kErrorResp, Status::kNoRights, 0xFFFF, 128, 0xDEAD'BEEF}, {}},
  };
}

const FrameAddress kAddress{
    default_mac_for_gpu(5), default_mac_for_gpu(3), 3, 5, 0xBEEF, 0xCAFEF00D};

Frame build(const std::vector<TxnSpec>& txns, std::uint8_t flags = 0, std::uint32_t seq = 0,
            std::uint32_t ack = 0, std::uint8_t credits = 0) {
  FrameBuilder builder(kDefaultFrameBytesMax);
  builder.start(kAddress);
  for (const TxnSpec& txn : txns) {
    EXPECT_TRUE(builder.fits(txn.payload.size()));
    auto payload = builder.append(txn.fields, txn.payload.size());
    std::copy(txn.payload.begin(), txn.payload.end(), payload.begin());
  }
  return builder.finish(flags, seq, ack, credits);
}

void expect_txn_equals(const TxnView& got, const TxnSpec& want) {
  EXPECT_EQ(got.opcode, want.fields.opcode) << to_string(want.fields.opcode);
  EXPECT_EQ(got.status, want.fields.status) << to_string(want.fields.opcode);
  EXPECT_EQ(got.tag, want.fields.tag) << to_string(want.fields.opcode);
  EXPECT_EQ(got.length, want.fields.length) << to_string(want.fields.opcode);
  EXPECT_EQ(got.address, want.fields.address) << to_string(want.fields.opcode);
  EXPECT_TRUE(same_bytes(got.payload, want.payload)) << to_string(want.fields.opcode);
}

// A frame with several different transactions, the base of the mutation tests.
Frame rich_frame() {
  std::vector<TxnSpec> txns = one_txn_per_opcode();
  return build({txns[0], txns[2], txns[7], txns[11], txns[9]}, kFlagSeq, 77, 0, 0);
}

// ---- CRC-32C ------------------------------------------------------------------------------

TEST(Crc32c, MatchesTheCastagnoliCheckValue) {
  EXPECT_EQ(crc32c(text_bytes("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c({}), 0u);
  EXPECT_EQ(crc32c_portable(text_bytes("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c_portable({}), 0u);
}

TEST(Crc32c, FastPathAgreesWithThePortableTableAtEveryLengthAndAlignment) {
  // The fast path works 8 bytes at a time plus a tail; cover every tail and start offset.
  const Bytes buffer = pattern_bytes(300, 17);
  for (std::size_t start = 0; start < 8; ++start) {
    for (std::size_t size = 0; size + start <= buffer.size(); ++size) {
      const auto bytes = std::span<const std::byte>(buffer).subspan(start, size);
      ASSERT_EQ(crc32c(bytes), crc32c_portable(bytes)) << "start " << start << " size " << size;
    }
  }
}

// ---- Round trips ----------------------------------------------------------------------------

TEST(WireRoundTrip, EveryOpcodeAloneKeepsAllFields) {
  for (const TxnSpec& spec : one_txn_per_opcode()) {
    SCOPED_TRACE(to_string(spec.fields.opcode));
    const Frame frame = build({spec}, kFlagSeq | kFlagCredit, 0x01020304, 0, 9);
    FrameView view;
    ASSERT_EQ(decode_frame(frame, view), DecodeError::kOk);
    EXPECT_EQ(view.dst_mac, kAddress.dst_mac);
    EXPECT_EQ(view.src_mac, kAddress.src_mac);
    EXPECT_EQ(view.src_gpu, 3);
    EXPECT_EQ(view.dst_gpu, 5);
    EXPECT_EQ(view.partition, 0xBEEF);
    EXPECT_EQ(view.flags, kFlagSeq | kFlagCredit);
    EXPECT_EQ(view.seq, 0x01020304u);
    EXPECT_EQ(view.ack, 0u);
    EXPECT_EQ(view.credits, 9);
    EXPECT_EQ(view.txn_count, 1);
    EXPECT_EQ(view.body.size(), kTxnHeaderBytes + spec.payload.size());
    EXPECT_EQ(frame.size(), kFrameOverheadBytes + kTxnHeaderBytes + spec.payload.size());
    const auto txns = txns_of(view);
    ASSERT_EQ(txns.size(), 1u);
    expect_txn_equals(txns[0], spec);
  }
}

TEST(WireRoundTrip, AllOpcodesPackedInOneFrameComeBackInOrder) {
  const std::vector<TxnSpec> specs = one_txn_per_opcode();
  const Frame frame = build(specs, kFlagAck | kFlagNak, 0, 0xA0B0C0D0, 0);
  FrameView view;
  ASSERT_EQ(decode_frame(frame, view), DecodeError::kOk);
  EXPECT_EQ(view.txn_count, specs.size());
  EXPECT_EQ(view.ack, 0xA0B0C0D0u);
  EXPECT_EQ(view.flags, kFlagAck | kFlagNak);
  const auto txns = txns_of(view);
  ASSERT_EQ(txns.size(), specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) expect_txn_equals(txns[i], specs[i]);
}

TEST(WireRoundTrip, BuilderOutputMatchesTheDocumentedByteOffsets) {
  const TxnSpec spec{{Opcode::kWriteReq, Status::kOk, 0xA1B2, 4, 0x0102030405060708},
                     pattern_bytes(4, 0)};
  const Frame frame =
      build({spec}, kFlagSeq | kFlagAck | kFlagCredit, 0x11223344, 0x55667788, 0x99);
  ASSERT_EQ(frame.size(), 38u + 16u + 4u + 4u);
  // Ethernet header, bytes 0..13.
  EXPECT_EQ(get_be(frame, 0, 6), kAddress.dst_mac.as_u64());
  EXPECT_EQ(get_be(frame, 6, 6), kAddress.src_mac.as_u64());
  EXPECT_EQ(get_be(frame, 12, 2), 0x88B5u);
  // Frame header, bytes 14..37.
  EXPECT_EQ(get_be(frame, 14, 1), kVersion);
  EXPECT_EQ(get_be(frame, 15, 1), 0x0Bu);
  EXPECT_EQ(get_be(frame, 16, 2), 3u);
  EXPECT_EQ(get_be(frame, 18, 2), 5u);
  EXPECT_EQ(get_be(frame, 20, 2), 0xBEEFu);
  EXPECT_EQ(get_be(frame, 22, 2), 20u);  // body_bytes
  EXPECT_EQ(get_be(frame, 24, 1), 1u);   // txn_count
  EXPECT_EQ(get_be(frame, 25, 1), 0x99u);
  EXPECT_EQ(get_be(frame, 26, 4), 0x11223344u);
  EXPECT_EQ(get_be(frame, 30, 4), 0x55667788u);
  EXPECT_EQ(get_be(frame, 34, 4), 0xCAFEF00Du);  // incarnation
  // First transaction header, bytes 38..53, then its payload.
  EXPECT_EQ(get_be(frame, 38, 1), 0x04u);
  EXPECT_EQ(get_be(frame, 39, 1), 0u);
  EXPECT_EQ(get_be(frame, 40, 2), 0xA1B2u);
  EXPECT_EQ(get_be(frame, 42, 2), 4u);
  EXPECT_EQ(get_be(frame, 44, 2), 4u);
  EXPECT_EQ(get_be(frame, 46, 8), 0x0102030405060708u);
  EXPECT_TRUE(same_bytes(std::span<const std::byte>(frame).subspan(54, 4), spec.payload));
  // CRC-32C over bytes 0..57, big-endian, right after the body.
  EXPECT_EQ(get_be(frame, 58, 4), crc32c(std::span<const std::byte>(frame).first(58)));

  // The independent hand encoder produces the very same bytes.
  RawFrame raw;
  raw.dst = kAddress.dst_mac;
  raw.src = kAddress.src_mac;
  raw.flags = kFlagSeq | kFlagAck | kFlagCredit;
  raw.src_gpu = 3;
  raw.dst_gpu = 5;
  raw.partition = 0xBEEF;
  raw.credits = 0x99;
  raw.seq = 0x11223344;
  raw.ack = 0x55667788;
  raw.incarnation = 0xCAFEF00D;
  raw.txns = {RawTxn{0x04, 0, 0xA1B2, 4, std::nullopt, 0x0102030405060708, spec.payload}};
  EXPECT_EQ(raw.encode(), frame);
}

TEST(WireRoundTrip, HandBuiltDefaultFrameIsValid) {
  // The malformed-frame tests below change one field of this frame each.
  EXPECT_EQ(decode(RawFrame{}.encode()), DecodeError::kOk);
}

TEST(WireRoundTrip, EthernetPaddingAfterTheCrcIsIgnored) {
  const TxnSpec spec{{Opcode::kReadReq, Status::kOk, 7, 8, 0x40}, {}};
  Frame frame = build({spec});
  ASSERT_EQ(frame.size(), 58u);  // below the 60-byte Ethernet minimum
  frame.resize(kMinEthernetFrameBytes, std::byte{0});
  FrameView view;
  ASSERT_EQ(decode_frame(frame, view), DecodeError::kOk);
  EXPECT_EQ(view.body.size(), kTxnHeaderBytes);
  // Padding need not be zero either.
  for (std::size_t i = 58; i < frame.size(); ++i) frame[i] = std::byte{0xA5};
  ASSERT_EQ(decode_frame(frame, view), DecodeError::kOk);
  const auto txns = txns_of(view);
  ASSERT_EQ(txns.size(), 1u);
  expect_txn_equals(txns[0], spec);
}

TEST(WireRoundTrip, PeekEthernetReadsOnlyTheEthernetHeader) {
  const Frame frame = build(one_txn_per_opcode());
  MacAddr dst, src;
  std::uint16_t ether_type = 0;
  ASSERT_TRUE(peek_ethernet(std::span<const std::byte>(frame).first(14), dst, src, ether_type));
  EXPECT_EQ(dst, kAddress.dst_mac);
  EXPECT_EQ(src, kAddress.src_mac);
  EXPECT_EQ(ether_type, kEtherTypeFabric);
  EXPECT_FALSE(peek_ethernet(std::span<const std::byte>(frame).first(13), dst, src, ether_type));
}

TEST(WireRoundTrip, EchoFrameCarriesItsPayloadVerbatimAndIsNotAFabricFrame) {
  const Bytes payload = pattern_bytes(100, 3);
  const Frame echo = make_echo_frame(default_mac_for_gpu(1), default_mac_for_gpu(2), payload);
  ASSERT_EQ(echo.size(), 14u + 100u);
  EXPECT_EQ(get_be(echo, 12, 2), kEtherTypeEcho);
  EXPECT_EQ(kEtherTypeEcho, 0x88B6);
  EXPECT_TRUE(same_bytes(std::span<const std::byte>(echo).subspan(14), payload));
  EXPECT_EQ(decode(echo), DecodeError::kNotFabric);
}

// ---- CRC and link-field restamping ---------------------------------------------------------

TEST(WireCrc, DetectsAFlippedBitAnywhereInTheFrame) {
  const Frame good = rich_frame();
  ASSERT_EQ(decode(good), DecodeError::kOk);
  for (std::size_t byte = 0; byte < good.size(); ++byte) {
    for (unsigned bit = 0; bit < 8; ++bit) {
      Frame bad = good;
      bad[byte] ^= static_cast<std::byte>(1u << bit);
      const DecodeError error = decode(bad);
      EXPECT_NE(error, DecodeError::kOk) << "byte " << byte << " bit " << bit;
      // EtherType, version and body_bytes are checked before the CRC; every other bit (MACs,
      // header fields, body and the CRC itself) is caught by the CRC.
      const bool checked_before_crc =
          byte == 12 || byte == 13 || byte == 14 || byte == 22 || byte == 23;
      if (!checked_before_crc) {
        EXPECT_EQ(error, DecodeError::kBadCrc) << "byte " << byte << " bit " << bit;
      }
    }
  }
}

TEST(WireCrc, RestampChangesLinkFieldsAndKeepsTheFrameValid) {
  Frame frame = rich_frame();
  FrameView before;
  ASSERT_EQ(decode_frame(frame, before), DecodeError::kOk);
  const Bytes body_before(before.body.begin(), before.body.end());
  const std::size_t size_before = frame.size();

  ASSERT_TRUE(
      restamp_link_fields(frame, kFlagSeq | kFlagAck | kFlagCredit, 0xCAFEF00D, 0x12345678, 42));
  FrameView after;
  ASSERT_EQ(decode_frame(frame, after), DecodeError::kOk);
  EXPECT_EQ(after.flags, kFlagSeq | kFlagAck | kFlagCredit);
  EXPECT_EQ(after.seq, 0xCAFEF00Du);
  EXPECT_EQ(after.ack, 0x12345678u);
  EXPECT_EQ(after.credits, 42);
  EXPECT_EQ(frame.size(), size_before);
  EXPECT_EQ(after.src_gpu, before.src_gpu);
  EXPECT_EQ(after.dst_gpu, before.dst_gpu);
  EXPECT_EQ(after.partition, before.partition);
  EXPECT_EQ(after.txn_count, before.txn_count);
  EXPECT_TRUE(same_bytes(after.body, body_before));

  // Restamping back to nothing yields the originally built frame.
  ASSERT_TRUE(restamp_link_fields(frame, kFlagSeq, 77, 0, 0));
  EXPECT_EQ(frame, rich_frame());
}

TEST(WireCrc, RestampWorksOnAPaddedFrameAndLeavesThePadding) {
  Frame frame = build({{{Opcode::kFlushReq, Status::kOk, 1, 0, 0}, {}}});
  frame.resize(60, std::byte{0x5A});
  ASSERT_TRUE(restamp_link_fields(frame, kFlagNak, 0, 3, 0));
  FrameView view;
  ASSERT_EQ(decode_frame(frame, view), DecodeError::kOk);
  EXPECT_EQ(view.flags, kFlagNak);
  EXPECT_EQ(view.ack, 3u);
  EXPECT_EQ(frame.back(), std::byte{0x5A});
}

TEST(WireCrc, RestampRefusesFramesThatDoNotDecode) {
  Frame corrupt = rich_frame();
  corrupt[40] ^= std::byte{0x01};
  const Frame corrupt_copy = corrupt;
  EXPECT_FALSE(restamp_link_fields(corrupt, kFlagSeq, 1, 1, 1));
  EXPECT_EQ(corrupt, corrupt_copy);  // untouched, and still caught by the CRC

  Frame echo =
      make_echo_frame(default_mac_for_gpu(1), default_mac_for_gpu(2), pattern_bytes(50, 1));
  EXPECT_FALSE(restamp_link_fields(echo, kFlagSeq, 1, 1, 1));
}

// ---- Frames without a CRC (the simulator's Crc::kOff) ----------------------------------------

// rich_frame() built without its CRC.
Frame rich_frame_without_crc() {
  std::vector<TxnSpec> txns = one_txn_per_opcode();
  FrameBuilder builder(kDefaultFrameBytesMax, Crc::kOff);
  builder.start(kAddress);
  for (const TxnSpec& txn : {txns[0], txns[2], txns[7], txns[11], txns[9]}) {
    auto payload = builder.append(txn.fields, txn.payload.size());
    std::copy(txn.payload.begin(), txn.payload.end(), payload.begin());
  }
  return builder.finish(kFlagSeq, 77, 0, 0);
}

TEST(WireNoCrc, TheBuilderLeavesTheCrcZeroAndOnlyACrcFreeDecodeAcceptsIt) {
  const Frame with_crc = rich_frame();
  const Frame without = rich_frame_without_crc();
  ASSERT_EQ(without.size(), with_crc.size());
  // Everything but the last four bytes is the same; those are zero.
  EXPECT_TRUE(std::equal(without.begin(), without.end() - 4, with_crc.begin()));
  EXPECT_EQ(get_be(without, without.size() - 4, 4), 0u);
  EXPECT_EQ(decode(without), DecodeError::kBadCrc);
  FrameView view;
  ASSERT_EQ(decode_frame(without, view, Crc::kOff), DecodeError::kOk);
  EXPECT_EQ(view.txn_count, 5);
  EXPECT_EQ(view.seq, 77u);
}

TEST(WireNoCrc, ACrcFreeDecodeStillValidatesEverythingElse) {
  FrameView view;
  RawFrame raw;
  raw.version = kVersion + 1;
  EXPECT_EQ(decode_frame(raw.encode(), view, Crc::kOff), DecodeError::kBadVersion);
  RawFrame unknown;
  unknown.txns[0].opcode = 0x7F;
  EXPECT_EQ(decode_frame(unknown.encode(), view, Crc::kOff), DecodeError::kUnknownOpcode);
  RawFrame mismatch;
  mismatch.txn_count = 2;
  EXPECT_EQ(decode_frame(mismatch.encode(), view, Crc::kOff), DecodeError::kTxnCountMismatch);
}

TEST(WireNoCrc, FillCrcMakesTheFrameABuilderWithCrcMakes) {
  Frame frame = rich_frame_without_crc();
  ASSERT_TRUE(fill_crc(frame));
  EXPECT_EQ(frame, rich_frame());
  Frame padded = rich_frame_without_crc();
  padded.resize(padded.size() + 10, std::byte{0x5A});
  ASSERT_TRUE(fill_crc(padded));
  EXPECT_EQ(decode(padded), DecodeError::kOk);
  EXPECT_EQ(padded.back(), std::byte{0x5A});
  // Not fabric frames, or a body running past the end: nothing is written.
  Frame echo =
      make_echo_frame(default_mac_for_gpu(1), default_mac_for_gpu(2), pattern_bytes(50, 1));
  const Frame echo_copy = echo;
  EXPECT_FALSE(fill_crc(echo));
  EXPECT_EQ(echo, echo_copy);
  Frame truncated = rich_frame_without_crc();
  truncated.resize(truncated.size() - 1);
  const Frame truncated_copy = truncated;
  EXPECT_FALSE(fill_crc(truncated));
  EXPECT_EQ(truncated, truncated_copy);
  Frame runt(kBodyOffset - 1, std::byte{0});
  EXPECT_FALSE(fill_crc(runt));
}

TEST(WireNoCrc, RestampWithoutCrcChangesTheLinkFieldsAndLeavesTheCrcZero) {
  Frame frame = rich_frame_without_crc();
  EXPECT_FALSE(restamp_link_fields(frame, kFlagSeq | kFlagAck, 9, 8, 7));  // checks the CRC
  ASSERT_TRUE(restamp_link_fields(frame, kFlagSeq | kFlagAck, 9, 8, 7, Crc::kOff));
  FrameView view;
  ASSERT_EQ(decode_frame(frame, view, Crc::kOff), DecodeError::kOk);
  EXPECT_EQ(view.seq, 9u);
  EXPECT_EQ(view.ack, 8u);
  EXPECT_EQ(get_be(frame, frame.size() - 4, 4), 0u);
  // The same restamp with CRCs on gives the same frame, CRC aside.
  Frame with_crc = rich_frame();
  ASSERT_TRUE(restamp_link_fields(with_crc, kFlagSeq | kFlagAck, 9, 8, 7));
  ASSERT_TRUE(fill_crc(frame));
  EXPECT_EQ(frame, with_crc);
}

TEST(WireBuilder, StartBuildsInTheBufferItIsGivenAndTheFrameIsTheSame) {
  Frame spare;
  spare.reserve(kDefaultFrameBytesMax);
  spare.assign(100, std::byte{0x77});  // old contents are discarded
  const std::byte* memory = spare.data();
  const std::vector<TxnSpec> txns = one_txn_per_opcode();
  FrameBuilder builder(kDefaultFrameBytesMax);
  builder.start(kAddress, std::move(spare));
  auto payload = builder.append(txns[2].fields, txns[2].payload.size());
  std::copy(txns[2].payload.begin(), txns[2].payload.end(), payload.begin());
  const Frame frame = builder.finish();
  EXPECT_EQ(frame.data(), memory);
  EXPECT_EQ(frame, build({txns[2]}));
}

// ---- Malformed frames: each hits one specific check. ---------------------------------------

TEST(WireMalformed, TruncatedEthernetHeader) {
  const Bytes full = RawFrame{}.encode();
  for (std::size_t size = 0; size < kEthernetHeaderBytes; ++size) {
    const Bytes prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(size));
    EXPECT_EQ(decode(prefix), DecodeError::kTruncatedEthernet) << size << " bytes";
  }
}

TEST(WireMalformed, WrongEtherType) {
  for (std::uint16_t ether_type : {std::uint16_t{0x0800}, std::uint16_t{0x86DD},
                                   std::uint16_t{0x88B4}, kEtherTypeEcho, std::uint16_t{0xB588}}) {
    RawFrame raw;
    raw.ether_type = ether_type;
    EXPECT_EQ(decode(raw.encode()), DecodeError::kNotFabric) << std::hex << ether_type;
  }
}

TEST(WireMalformed, TruncatedFrameHeader) {
  const Bytes full = RawFrame{}.encode();
  for (std::size_t size = kEthernetHeaderBytes; size < kBodyOffset; ++size) {
    const Bytes prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(size));
    EXPECT_EQ(decode(prefix), DecodeError::kTruncatedHeader) << size << " bytes";
  }
}

TEST(WireMalformed, BadVersion) {
  for (std::uint8_t version : std::initializer_list<std::uint8_t>{0, 1, 3, 0x81, 0xFF}) {
    RawFrame raw;
    raw.version = version;
    EXPECT_EQ(decode(raw.encode()), DecodeError::kBadVersion) << int{version};
  }
}

TEST(WireMalformed, BodyBytesPastTheFrame) {
  const std::size_t real_body = RawFrame{}.encode().size() - kFrameOverheadBytes;
  for (std::size_t claimed : {real_body + 1, real_body + 4, std::size_t{0xFFFF}}) {
    RawFrame raw;
    raw.body_bytes = static_cast<std::uint16_t>(claimed);
    EXPECT_EQ(decode(raw.encode()), DecodeError::kBodyPastFrame) << claimed;
  }
  // A frame cut anywhere inside the body or CRC.
  const Bytes full = RawFrame{}.encode();
  for (std::size_t size = kBodyOffset; size < full.size(); ++size) {
    const Bytes prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(size));
    EXPECT_EQ(decode(prefix), DecodeError::kBodyPastFrame) << size << " bytes";
  }
}

TEST(WireMalformed, ZeroTransactionCount) {
  RawFrame raw;
  raw.txn_count = 0;
  EXPECT_EQ(decode(raw.encode()), DecodeError::kNoTransactions);
  raw.txns.clear();  // an empty body too
  EXPECT_EQ(decode(raw.encode()), DecodeError::kNoTransactions);
  raw.flags = kFlagSeq | kFlagAck;  // a sequenced frame must carry transactions
  EXPECT_EQ(decode(raw.encode()), DecodeError::kNoTransactions);
}

TEST(WireControlFrames, AnUnsequencedAckWithAnEmptyBodyDecodes) {
  RawFrame raw;
  raw.txn_count = 0;
  raw.txns.clear();
  raw.flags = kFlagAck | kFlagCredit | kFlagNak;
  raw.ack = 41;
  raw.credits = 16;
  FrameView view;
  ASSERT_EQ(decode_frame(raw.encode(), view), DecodeError::kOk);
  EXPECT_EQ(view.txn_count, 0);
  EXPECT_EQ(view.ack, 41u);
  EXPECT_EQ(view.credits, 16);
  EXPECT_TRUE(view.body.empty());
  // ...but not with transaction bytes behind a zero count.
  raw.txns.push_back(RawTxn{});
  EXPECT_EQ(decode(raw.encode()), DecodeError::kNoTransactions);
}

TEST(WireControlFrames, RestampRefusesToSequenceAControlFrame) {
  RawFrame raw;
  raw.txn_count = 0;
  raw.txns.clear();
  raw.flags = kFlagAck;
  Bytes frame = raw.encode();
  const Bytes before = frame;
  EXPECT_FALSE(restamp_link_fields(frame, kFlagSeq | kFlagAck, 5, 4, 1));
  EXPECT_EQ(frame, before);
  EXPECT_TRUE(restamp_link_fields(frame, kFlagAck | kFlagNak, 0, 9, 2));
}

TEST(WireMalformed, TruncatedTransactionHeader) {
  Bytes whole_txn;
  RawTxn{}.encode_into(whole_txn);
  for (std::size_t kept = 1; kept < kTxnHeaderBytes; ++kept) {
    RawFrame raw;
    raw.txns.clear();
    raw.txn_count = 1;
    raw.extra_body.assign(whole_txn.begin(), whole_txn.begin() + static_cast<std::ptrdiff_t>(kept));
    EXPECT_EQ(decode(raw.encode()), DecodeError::kTruncatedTxn) << kept << " header bytes";
  }
  // The second of two transactions is cut short.
  RawFrame raw;
  raw.txn_count = 2;
  raw.extra_body.assign(whole_txn.begin(), whole_txn.begin() + 10);
  EXPECT_EQ(decode(raw.encode()), DecodeError::kTruncatedTxn);
}

TEST(WireMalformed, PayloadPastTheBody) {
  RawFrame raw;
  raw.txns[0].length = 5;
  raw.txns[0].payload_bytes = 5;  // 4 bytes follow
  EXPECT_EQ(decode(raw.encode()), DecodeError::kPayloadPastBody);
  raw.txns[0].payload_bytes = 0xFFFF;
  EXPECT_EQ(decode(raw.encode()), DecodeError::kPayloadPastBody);
}

TEST(WireMalformed, UnknownOpcode) {
  for (std::uint8_t opcode : std::initializer_list<std::uint8_t>{0x00, 0x0D, 0x7F, 0xFF}) {
    RawFrame raw;
    raw.txns[0].opcode = opcode;
    EXPECT_EQ(decode(raw.encode()), DecodeError::kUnknownOpcode) << int{opcode};
    EXPECT_FALSE(is_known_opcode(opcode));
  }
  for (std::uint8_t opcode = 0x01; opcode <= 0x0C; ++opcode) EXPECT_TRUE(is_known_opcode(opcode));
}

struct BadLengthCase {
  const char* what;
  Opcode opcode;
  std::uint8_t status;
  std::uint16_t length;
  std::size_t payload_bytes;
};

TEST(WireMalformed, LengthsThatBreakTheOpcodeRules) {
  const BadLengthCase cases[] = {
      {"read request with payload", Opcode::kReadReq, 0, 8, 8},
      {"read request of zero bytes", Opcode::kReadReq, 0, 0, 0},
      {"read response payload != length", Opcode::kReadResp, 0, 8, 4},
      {"read response of zero bytes", Opcode::kReadResp, 0, 0, 0},
      {"posted write payload < length", Opcode::kWritePosted, 0, 16, 8},
      {"posted write payload > length", Opcode::kWritePosted, 0, 4, 8},
      {"write request payload != length", Opcode::kWriteReq, 0, 16, 8},
      {"write ack with payload", Opcode::kWriteAck, 0, 4, 4},
      {"fetch-add width 3", Opcode::kAtomicFetchAdd, 0, 3, 3},
      {"swap width 16", Opcode::kAtomicSwap, 0, 16, 16},
      {"swap payload != width", Opcode::kAtomicSwap, 0, 8, 4},
      {"cas width 3", Opcode::kAtomicCas, 0, 3, 6},
      {"cas payload == width", Opcode::kAtomicCas, 0, 8, 8},
      {"cas payload 2x width + 1", Opcode::kAtomicCas, 0, 4, 9},
      {"atomic response width 2", Opcode::kAtomicResp, 0, 2, 2},
      {"flush request with payload", Opcode::kFlushReq, 0, 0, 1},
      {"flush response with payload", Opcode::kFlushResp, 0, 0, 4},
      {"error response with status 0", Opcode::kErrorResp, 0, 8, 0},
      {"error response with payload", Opcode::kErrorResp, 2, 8, 8},
  };
  for (const BadLengthCase& c : cases) {
    RawFrame raw;
    raw.txns[0].opcode = static_cast<std::uint8_t>(c.opcode);
    raw.txns[0].status = c.status;
    raw.txns[0].length = c.length;
    raw.txns[0].payload = pattern_bytes(c.payload_bytes, 1);
    EXPECT_EQ(decode(raw.encode()), DecodeError::kBadLength) << c.what;
  }
}

TEST(WireMalformed, TransactionCountMismatch) {
  RawFrame two_txns;
  two_txns.txns.push_back(RawTxn{});
  ASSERT_EQ(decode(two_txns.encode()), DecodeError::kOk);

  RawFrame more_than_announced = two_txns;
  more_than_announced.txn_count = 1;
  EXPECT_EQ(decode(more_than_announced.encode()), DecodeError::kTxnCountMismatch);

  RawFrame fewer_than_announced = two_txns;
  fewer_than_announced.txn_count = 3;
  EXPECT_EQ(decode(fewer_than_announced.encode()), DecodeError::kTxnCountMismatch);

  RawFrame trailing_bytes;
  trailing_bytes.extra_body = pattern_bytes(3, 0);
  EXPECT_EQ(decode(trailing_bytes.encode()), DecodeError::kTxnCountMismatch);
}

TEST(WireMalformed, EveryDecodeErrorHasItsOwnName) {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < kDecodeErrorCount; ++i) {
    const std::string_view name = to_string(static_cast<DecodeError>(i));
    EXPECT_NE(name, "unknown") << i;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), kDecodeErrorCount);
}

// ---- Robustness: decoding arbitrary bytes never crashes or reads out of bounds. ------------
// Every input lives in a vector of exactly its size, so ASan flags any read past it.

TEST(WireRobustness, EveryPrefixOfAValidFrameIsRejectedCleanly) {
  const Frame full = rich_frame();
  for (std::size_t size = 0; size <= full.size(); ++size) {
    const Bytes prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(size));
    const DecodeError error = decode(prefix);
    if (size < kEthernetHeaderBytes) {
      EXPECT_EQ(error, DecodeError::kTruncatedEthernet) << size;
    } else if (size < kBodyOffset) {
      EXPECT_EQ(error, DecodeError::kTruncatedHeader) << size;
    } else if (size < full.size()) {
      EXPECT_EQ(error, DecodeError::kBodyPastFrame) << size;
    } else {
      EXPECT_EQ(error, DecodeError::kOk) << size;
    }
  }
}

TEST(WireRobustness, RandomMutationsWithFixedUpCrcNeverCrash) {
  const Frame base = rich_frame();
  std::mt19937 rng(20240601);  // raw engine output only: identical on every standard library
  std::set<DecodeError> seen;
  std::size_t accepted_bytes = 0;
  for (int round = 0; round < 10'000; ++round) {
    Bytes frame = base;
    const std::size_t mutations = 1 + rng() % 4;
    for (std::size_t m = 0; m < mutations; ++m) {
      // Mostly the transactions, sometimes the header fields that bound them.
      const std::size_t position = rng() % 4 == 0
                                       ? 14 + rng() % kFrameHeaderBytes
                                       : kBodyOffset + rng() % (frame.size() - kBodyOffset);
      frame[position] = static_cast<std::byte>(rng() & 0xFF);
    }
    if (rng() % 8 == 0) frame.resize(rng() % (frame.size() + 1));  // and sometimes cut it
    fix_crc(frame);
    frame.shrink_to_fit();

    FrameView view;
    const DecodeError error = decode_frame(frame, view);
    seen.insert(error);
    if (error != DecodeError::kOk) continue;
    // An accepted frame's transactions lie inside its body, and the cursor agrees with the count.
    const std::byte* body_begin = view.body.data();
    const std::byte* body_end = view.body.data() + view.body.size();
    ASSERT_GE(body_begin, frame.data());
    ASSERT_LE(body_end, frame.data() + frame.size());
    std::size_t count = 0;
    for (const TxnView& txn : txns_of(view)) {
      ++count;
      if (txn.payload.empty()) continue;
      ASSERT_GE(txn.payload.data(), body_begin);
      ASSERT_LE(txn.payload.data() + txn.payload.size(), body_end);
      accepted_bytes += txn.payload.size();
    }
    EXPECT_EQ(count, view.txn_count);
  }
  // The CRC fix-up lets the mutations reach the deep checks, not just the CRC.
  EXPECT_TRUE(seen.contains(DecodeError::kOk));
  EXPECT_TRUE(seen.contains(DecodeError::kUnknownOpcode));
  EXPECT_TRUE(seen.contains(DecodeError::kBadLength));
  EXPECT_TRUE(seen.contains(DecodeError::kPayloadPastBody));
  EXPECT_TRUE(seen.contains(DecodeError::kBodyPastFrame));
  EXPECT_GT(accepted_bytes, 0u);
}

TEST(WireRobustness, ValidateFrameAgreesWithDecodeFrameOnMutatedFrames) {
  const Frame base = rich_frame();
  std::mt19937 rng(20240602);
  std::set<DecodeError> seen;
  for (int round = 0; round < 10'000; ++round) {
    Bytes frame = base;
    for (std::size_t m = 1 + rng() % 4; m > 0; --m) {
      frame[rng() % frame.size()] = static_cast<std::byte>(rng() & 0xFF);
    }
    if (rng() % 8 == 0) frame.resize(rng() % (frame.size() + 1));
    if (rng() % 2 == 0) fix_crc(frame);
    for (const Crc crc : {Crc::kOn, Crc::kOff}) {
      FrameView view;
      const DecodeError error = decode_frame(frame, view, crc);
      GpuId src_gpu = kInvalidGpu;
      ASSERT_EQ(validate_frame(frame, src_gpu, crc), error) << "round " << round;
      if (error == DecodeError::kOk) {
        EXPECT_EQ(src_gpu, view.src_gpu);
      }
      seen.insert(error);
    }
  }
  EXPECT_TRUE(seen.contains(DecodeError::kOk));
  EXPECT_TRUE(seen.contains(DecodeError::kBadCrc));
  EXPECT_TRUE(seen.contains(DecodeError::kUnknownOpcode));
  EXPECT_TRUE(seen.contains(DecodeError::kBadLength));
  EXPECT_TRUE(seen.contains(DecodeError::kTxnCountMismatch));
}

TEST(WireRobustness, RandomGarbageIsRejectedWithoutCrashing) {
  std::mt19937 rng(7);
  for (int round = 0; round < 2'000; ++round) {
    Bytes frame(rng() % 200);
    for (auto& octet : frame) octet = static_cast<std::byte>(rng() & 0xFF);
    if (frame.size() >= 14 && rng() % 2 == 0) set_be(frame, 12, kEtherTypeFabric, 2);
    if (frame.size() >= 15 && rng() % 2 == 0) set_be(frame, 14, kVersion, 1);
    FrameView view;
    (void)decode_frame(frame, view);  // must simply return
  }
  SUCCEED();
}

// ---- Builder limits and combining ----------------------------------------------------------

TEST(FrameBuilderLimits, FitsRespectsTheFrameLimit) {
  FrameBuilder builder(kDefaultFrameBytesMax);
  EXPECT_FALSE(builder.fits(0));  // not started
  builder.start(kAddress);
  const std::size_t max_payload = max_txn_payload(kDefaultFrameBytesMax);
  // One transaction may fill the frame exactly.
  EXPECT_TRUE(builder.fits(kDefaultFrameBytesMax - kFrameOverheadBytes - kTxnHeaderBytes));
  EXPECT_FALSE(builder.fits(kDefaultFrameBytesMax - kFrameOverheadBytes - kTxnHeaderBytes + 1));
  builder.append({Opcode::kWritePosted, Status::kOk, 0, static_cast<std::uint16_t>(max_payload), 0},
                 max_payload);
  EXPECT_FALSE(builder.fits(max_payload));
  const Frame frame = builder.finish();
  EXPECT_LE(frame.size(), kDefaultFrameBytesMax);
  EXPECT_EQ(decode(frame), DecodeError::kOk);
}

TEST(FrameBuilderLimits, StopsAt255Transactions) {
  FrameBuilder builder(kAbsoluteFrameBytesMax);
  builder.start(kAddress);
  for (int i = 0; i < 255; ++i) {
    ASSERT_TRUE(builder.fits(0)) << i;
    builder.append({Opcode::kFlushReq, Status::kOk, static_cast<std::uint16_t>(i), 0, 0}, 0);
  }
  EXPECT_FALSE(builder.fits(0));
  FrameView view;
  const Frame frame = builder.finish();
  ASSERT_EQ(decode_frame(frame, view), DecodeError::kOk);
  EXPECT_EQ(view.txn_count, 255);
  EXPECT_EQ(txns_of(view).size(), 255u);
}

TEST(FrameBuilderLimits, ExtendsOnlyAnAdjacentTrailingPostedWrite) {
  FrameBuilder builder(kDefaultFrameBytesMax);
  const std::size_t max_payload = max_txn_payload(kDefaultFrameBytesMax);
  const Bytes first = pattern_bytes(8, 1);
  const Bytes second = pattern_bytes(8, 2);
  EXPECT_FALSE(builder.try_extend_posted_write(0x108, second, max_payload));  // not started
  builder.start(kAddress);
  EXPECT_FALSE(builder.try_extend_posted_write(0x108, second, max_payload));  // empty
  auto payload = builder.append({Opcode::kWritePosted, Status::kOk, 0, 8, 0x100}, 8);
  std::copy(first.begin(), first.end(), payload.begin());
  EXPECT_FALSE(builder.try_extend_posted_write(0x109, second, max_payload));  // gap
  EXPECT_FALSE(builder.try_extend_posted_write(0x100, second, max_payload));  // overlap
  EXPECT_FALSE(builder.try_extend_posted_write(0x108, pattern_bytes(max_payload, 0), max_payload));
  EXPECT_TRUE(builder.try_extend_posted_write(0x108, second, max_payload));

  FrameView view;
  const Frame frame = builder.finish();
  ASSERT_EQ(decode_frame(frame, view), DecodeError::kOk);
  const auto txns = txns_of(view);
  ASSERT_EQ(txns.size(), 1u);
  EXPECT_EQ(txns[0].address, 0x100u);
  EXPECT_EQ(txns[0].length, 16);
  Bytes both = first;
  both.insert(both.end(), second.begin(), second.end());
  EXPECT_TRUE(same_bytes(txns[0].payload, both));

  // A posted write that is not the last transaction is never extended.
  builder.start(kAddress);
  builder.append({Opcode::kWritePosted, Status::kOk, 0, 8, 0x100}, 8);
  builder.append({Opcode::kReadReq, Status::kOk, 1, 8, 0x100}, 0);
  EXPECT_FALSE(builder.try_extend_posted_write(0x108, second, max_payload));
  // Nor is a non-posted write.
  builder.start(kAddress);
  builder.append({Opcode::kWriteReq, Status::kOk, 1, 8, 0x100}, 8);
  EXPECT_FALSE(builder.try_extend_posted_write(0x108, second, max_payload));
}

// ---- Sizes and cost model ------------------------------------------------------------------

TEST(WireCost, SixtyFourBytePostedWriteInDefaultFrames) {
  const WireCost cost = posted_write_cost(64, 1792);
  EXPECT_EQ(cost.payload_bytes, 64u);
  EXPECT_EQ(cost.frames, 1u);
  EXPECT_EQ(cost.header_bytes, 42u + 16u);
  EXPECT_EQ(cost.wire_bytes, 64u + 58u + 24u);
  EXPECT_DOUBLE_EQ(cost.efficiency, 64.0 / 146.0);
}

TEST(WireCost, SplitsAtTheTransactionPayloadLimitAndPadsSmallFrames) {
  EXPECT_EQ(max_txn_payload(1792), 1728u);
  EXPECT_EQ(max_txn_payload(2048 - 256), 1728u);
  EXPECT_EQ(max_txn_payload(9000), 8896u);

  const WireCost exactly_one = posted_write_cost(1728, 1792);
  EXPECT_EQ(exactly_one.frames, 1u);
  const WireCost one_more = posted_write_cost(1729, 1792);
  EXPECT_EQ(one_more.frames, 2u);
  // The second frame carries 1 B: 59 B of frame, padded to 60.
  EXPECT_EQ(one_more.header_bytes, 58u + (60u - 1u));
  EXPECT_EQ(one_more.wire_bytes, (58u + 1728u + 24u) + (60u + 24u));

  EXPECT_EQ(posted_write_cost(0, 1792).frames, 0u);
  EXPECT_EQ(posted_write_cost(0, 1792).efficiency, 0.0);
  EXPECT_EQ(posted_write_cost(4096, 1792).frames, 3u);
}

TEST(WireCost, WireBytesPadsToTheEthernetMinimum) {
  EXPECT_EQ(wire_bytes(0), 60u + 24u);
  EXPECT_EQ(wire_bytes(54), 60u + 24u);
  EXPECT_EQ(wire_bytes(59), 60u + 24u);
  EXPECT_EQ(wire_bytes(60), 60u + 24u);
  EXPECT_EQ(wire_bytes(61), 61u + 24u);
  EXPECT_EQ(wire_bytes(1792), 1792u + 24u);
}

TEST(WireCost, FrameLimitIsClampedSoThePayloadLimitIsNeverZero) {
  // Below one 64 B transaction the limit is raised; above jumbo it is capped (the builder
  // applies the same clamp, so its frames and the payload limit agree).
  EXPECT_EQ(max_txn_payload(0), 64u);
  EXPECT_EQ(max_txn_payload(100), 64u);
  EXPECT_EQ(max_txn_payload(kMinFrameBytesMax), 64u);
  EXPECT_EQ(max_txn_payload(100'000), max_txn_payload(kAbsoluteFrameBytesMax));

  FrameBuilder tiny(10);
  tiny.start(kAddress);
  EXPECT_TRUE(tiny.fits(64));
  EXPECT_FALSE(tiny.fits(65));
  FrameBuilder huge(100'000);
  huge.start(kAddress);
  EXPECT_TRUE(huge.fits(max_txn_payload(100'000)));
  EXPECT_FALSE(huge.fits(kAbsoluteFrameBytesMax));
}

TEST(WireCost, RequestPayloadBytesPerOpcode) {
  EXPECT_EQ(request_payload_bytes(Opcode::kReadReq, 100), 0u);
  EXPECT_EQ(request_payload_bytes(Opcode::kWritePosted, 100), 100u);
  EXPECT_EQ(request_payload_bytes(Opcode::kWriteReq, 100), 100u);
  EXPECT_EQ(request_payload_bytes(Opcode::kAtomicFetchAdd, 8), 8u);
  EXPECT_EQ(request_payload_bytes(Opcode::kAtomicSwap, 4), 4u);
  EXPECT_EQ(request_payload_bytes(Opcode::kAtomicCas, 8), 16u);
  EXPECT_EQ(request_payload_bytes(Opcode::kFlushReq, 0), 0u);
}

}  // namespace
}  // namespace ethx::wire
