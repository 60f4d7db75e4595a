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

// One field of a packed struct, read or written in place: `Field` is the field's type (a
// Boost.Endian buffer), `offset` where the struct starts plus offsetof(Struct, field). Hot
// paths use these instead of building a whole struct on the stack and copying it out (or in
// and then reading fields): the copy reads back many narrow stores with one wide load, which
// the CPU cannot forward from its store buffer, a stall of a dozen cycles or more each time
// (docs/simulator.md, "Speed").
template <class Field>
typename Field::value_type load_field(std::span<const std::byte> bytes, std::size_t offset) {
  return load<Field>(bytes, offset).value();
}

template <class Field>
void store_field(std::span<std::byte> bytes, std::size_t offset, typename Field::value_type value) {
  store(bytes, offset, Field(value));
}

inline MacAddr to_mac(const std::uint8_t (&octets)[6]) {
  MacAddr mac;
  std::copy(std::begin(octets), std::end(octets), mac.octets.begin());
  return mac;
}

}  // namespace ethx::packed
