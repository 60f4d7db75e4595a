// The Ethernet II header every ethx frame starts with, load/store (EtherType 0x88B5) and RoCEv2
// (0x0800) alike: one definition for both encoders (IEEE 802.3 clause 3.2; no 802.1Q tag).
#pragma once

#include <boost/endian/buffers.hpp>
#include <cstddef>
#include <cstdint>

namespace ethx {

struct EthernetHeader {
  std::uint8_t dst[6];
  std::uint8_t src[6];
  boost::endian::big_uint16_buf_t ether_type;
};
static_assert(sizeof(EthernetHeader) == 14);

inline constexpr std::size_t kEthernetHeaderBytes = sizeof(EthernetHeader);

// Link-local group address (IEEE 802.1Q reserved 01-80-C2-00-00-0x: never forwarded by a
// bridge), the one MAC control frames such as PAUSE use: link-level retry's ACK/NAK, credit
// updates and PFC frames stay on their hop.
inline constexpr std::uint8_t kLinkControlMac[6] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};

}  // namespace ethx
