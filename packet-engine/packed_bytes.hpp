// Reading and writing the packed wire structs of both encoders (ethx frames in wire.cpp, RoCEv2
// in roce_wire.cpp) at an offset of a byte range: memcpy, so no alignment is assumed. Callers
// check the bounds first.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "packet-engine/mac_addr.hpp"

namespace ethx::packed {

template <class T>
T load(std::span<const std::byte> bytes, std::size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

template <class T>
void store(std::span<std::byte> bytes, std::size_t offset, const T& value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

inline MacAddr to_mac(const std::uint8_t (&octets)[6]) {
  MacAddr mac;
  std::copy(std::begin(octets), std::end(octets), mac.octets.begin());
  return mac;
}

}  // namespace ethx::packed
