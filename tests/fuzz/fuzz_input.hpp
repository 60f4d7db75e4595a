// The input format shared by the frame fuzz targets and the seed generator (docs/fuzzing.md).
//
//   fuzz_frame_decode:            control byte, then one frame
//   fuzz_endpoint_rx, _switch_..: records until the input runs out, each
//                                 control byte, 16-bit big-endian length, that many frame bytes
//                                 (fewer if the input ends first, so a mutation that cuts the
//                                 tail still yields a frame)
//
// The low three bits of a control byte are ModeBits; the upper five belong to the target
// (time step, ingress port, ...).
//
// Why the fix-up bits: a random mutation almost never leaves a valid CRC-32C trailer, so
// without help nearly every input dies in decode_frame's CRC check and the transaction parser,
// the completer and the requester stay unexplored. With kFixLengthAndCrc the harness rewrites
// body_bytes to cover the whole frame and recomputes the CRC before handing it over; without
// it the bytes go in untouched, so the malformed-frame paths are fuzzed as well.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "packet-engine/mac_addr.hpp"
#include "packet-engine/wire.hpp"

namespace ethx::fuzz {

enum ModeBit : std::uint8_t {
  kFixLengthAndCrc = 1u << 0,  // rewrite body_bytes and the CRC trailer
  kFixHeader = 1u << 1,        // force the fabric EtherType and version 1
  kTargetSelf = 1u << 2,       // address the frame to the harness's own GPU and MAC
};

struct Record {
  std::uint8_t control = 0;
  std::span<const std::byte> bytes;
};

inline std::span<const std::byte> as_bytes(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size};
}

// Takes the next record off the front of `rest`; false once `rest` is too short for a header.
inline bool next_record(std::span<const std::byte>& rest, Record& out) {
  if (rest.size() < 3) return false;
  out.control = std::to_integer<std::uint8_t>(rest[0]);
  const std::size_t length =
      std::to_integer<std::size_t>(rest[1]) << 8 | std::to_integer<std::size_t>(rest[2]);
  rest = rest.subspan(3);
  const std::size_t taken = length < rest.size() ? length : rest.size();
  out.bytes = rest.first(taken);
  rest = rest.subspan(taken);
  return true;
}

inline void append_record(std::vector<std::byte>& input, std::uint8_t control,
                          std::span<const std::byte> frame) {
  input.push_back(std::byte{control});
  input.push_back(static_cast<std::byte>(frame.size() >> 8));
  input.push_back(static_cast<std::byte>(frame.size() & 0xFF));
  input.insert(input.end(), frame.begin(), frame.end());
}

inline constexpr std::uint8_t kModeMask = 0x07;
inline constexpr unsigned kTargetBitsShift = 3;

struct SelfAddress {
  MacAddr mac;
  GpuId gpu = 0;
};

// Applies the fix-ups the ModeBits of `mode` ask for to a copy of `bytes`. Fields that do not fit
// in a short frame are left alone: the short frame is itself worth fuzzing.
inline wire::Frame fix_up(std::span<const std::byte> bytes, std::uint8_t mode,
                          const SelfAddress* self = nullptr) {
  wire::Frame frame(bytes.begin(), bytes.end());
  auto put8 = [&frame](std::size_t offset, std::uint8_t value) {
    if (offset < frame.size()) frame[offset] = std::byte{value};
  };
  auto put16 = [&put8](std::size_t offset, std::uint16_t value) {
    put8(offset, static_cast<std::uint8_t>(value >> 8));
    put8(offset + 1, static_cast<std::uint8_t>(value & 0xFF));
  };
  constexpr std::size_t kEtherTypeAt = 12;
  constexpr std::size_t kVersionAt = wire::kEthernetHeaderBytes;
  constexpr std::size_t kDstGpuAt = wire::kEthernetHeaderBytes + 4;
  constexpr std::size_t kBodyBytesAt = wire::kEthernetHeaderBytes + 8;
  if ((mode & kFixHeader) != 0) {
    put16(kEtherTypeAt, wire::kEtherTypeFabric);
    put8(kVersionAt, wire::kVersion);
  }
  if ((mode & kTargetSelf) != 0 && self != nullptr) {
    for (std::size_t i = 0; i < self->mac.octets.size(); ++i) put8(i, self->mac.octets[i]);
    put16(kDstGpuAt, self->gpu);
  }
  if ((mode & kFixLengthAndCrc) != 0 && frame.size() >= wire::kFrameOverheadBytes) {
    const std::size_t body_bytes = frame.size() - wire::kFrameOverheadBytes;
    if (body_bytes <= 0xFFFF) {
      put16(kBodyBytesAt, static_cast<std::uint16_t>(body_bytes));
      const std::size_t crc_at = frame.size() - wire::kCrcBytes;
      const std::uint32_t crc = wire::crc32c(std::span<const std::byte>(frame).first(crc_at));
      for (std::size_t i = 0; i < wire::kCrcBytes; ++i) {
        put8(crc_at + i, static_cast<std::uint8_t>(crc >> (8 * (wire::kCrcBytes - 1 - i))));
      }
    }
  }
  return frame;
}

}  // namespace ethx::fuzz
