// Deterministic data for verification: every 8-byte word the benchmarks load or store has a
// value computed from where it lives, so any reader can check it without a copy.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

#include "address-map/fabric_types.hpp"

namespace ethx {

// splitmix64: cheap, and every input bit affects every output bit.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The word at byte `offset` (a multiple of 8) of GPU `gpu`'s memory, salted by `salt` so data
// written by different runs or writers differs.
constexpr std::uint64_t pattern_word(GpuId gpu, std::uint64_t offset, std::uint64_t salt) {
  return mix64((std::uint64_t{gpu} << 48) ^ (offset >> 3) ^ mix64(salt));
}

inline void fill_pattern(std::span<std::byte> out, GpuId gpu, std::uint64_t offset,
                         std::uint64_t salt) {
  for (std::size_t i = 0; i + 8 <= out.size(); i += 8) {
    const std::uint64_t word = pattern_word(gpu, offset + i, salt);
    std::memcpy(out.data() + i, &word, 8);
  }
}

// Number of 8-byte words in `data` that differ from the pattern.
inline std::uint64_t pattern_mismatches(std::span<const std::byte> data, GpuId gpu,
                                        std::uint64_t offset, std::uint64_t salt) {
  std::uint64_t bad = 0;
  for (std::size_t i = 0; i + 8 <= data.size(); i += 8) {
    std::uint64_t word;
    std::memcpy(&word, data.data() + i, 8);
    bad += word != pattern_word(gpu, offset + i, salt) ? 1 : 0;
  }
  return bad;
}

}  // namespace ethx
