// Ethernet MAC addresses and the fabric's default MAC-per-GPU scheme.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "address-map/fabric_types.hpp"

namespace ethx {

struct MacAddr {
  std::array<std::uint8_t, 6> octets{};

  bool is_broadcast() const {
    return octets == std::array<std::uint8_t, 6>{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  }
  bool is_multicast() const { return (octets[0] & 0x01) != 0; }
  // The six octets as one big-endian number (a switch's table key: two per frame), read in
  // two loads instead of six.
  std::uint64_t as_u64() const {
    if constexpr (std::endian::native == std::endian::little) {
      std::uint32_t high = 0;
      std::uint16_t low = 0;
      std::memcpy(&high, octets.data(), sizeof(high));
      std::memcpy(&low, octets.data() + sizeof(high), sizeof(low));
      return std::uint64_t{__builtin_bswap32(high)} << 16 | __builtin_bswap16(low);
    }
    std::uint64_t value = 0;
    for (auto octet : octets) value = (value << 8) | octet;
    return value;
  }
  std::string to_string() const;
  // Accepts "aa:bb:cc:dd:ee:ff"; nullopt on anything else.
  static std::optional<MacAddr> parse(std::string_view text);
  friend bool operator==(const MacAddr&, const MacAddr&) = default;
};

inline constexpr MacAddr kBroadcastMac{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};

// GPU k gets 02:e7:68:00:kk:kk: locally administered (bit 1 of the first octet), unicast,
// so it can never collide with a real NIC's burned-in address.
constexpr MacAddr default_mac_for_gpu(GpuId gpu) {
  return MacAddr{{0x02, 0xe7, 0x68, 0x00, static_cast<std::uint8_t>(gpu >> 8),
                  static_cast<std::uint8_t>(gpu & 0xff)}};
}

}  // namespace ethx
