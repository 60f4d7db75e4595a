// Basic vocabulary shared by every ethx library: GPU ids, fabric addresses, access rights.
#pragma once

#include <cstdint>
#include <string>

namespace ethx {

// Nanoseconds, either wall-clock (real-time runtimes) or virtual (the simulator).
// Cores never read a clock; they are handed `now`.
using TimeNs = std::uint64_t;

// A GPU's position in the fabric, 0..gpu_count-1.
using GpuId = std::uint16_t;
inline constexpr GpuId kInvalidGpu = 0xFFFF;

// A global fabric address names one byte of one GPU's local memory: GPU id × local offset.
// Packed into 64 bits as gpu << 40 | offset, so each GPU has a 1 TiB local address space;
// the copy engine's descriptors and the guest tools use this packed form.
inline constexpr unsigned kFabricOffsetBits = 40;
inline constexpr std::uint64_t kFabricOffsetMask = (std::uint64_t{1} << kFabricOffsetBits) - 1;

struct FabricAddr {
  GpuId gpu = kInvalidGpu;
  std::uint64_t offset = 0;  // byte offset in that GPU's local memory

  constexpr std::uint64_t packed() const {
    return (std::uint64_t{gpu} << kFabricOffsetBits) | (offset & kFabricOffsetMask);
  }
  static constexpr FabricAddr unpack(std::uint64_t packed) {
    return FabricAddr{static_cast<GpuId>(packed >> kFabricOffsetBits), packed & kFabricOffsetMask};
  }
  friend constexpr bool operator==(const FabricAddr&, const FabricAddr&) = default;
};

// Access rights, a bit set. A window grants them to the requester; a completer re-checks them.
enum Rights : std::uint8_t {
  kRightNone = 0,
  kRightRead = 1u << 0,
  kRightWrite = 1u << 1,
  kRightAtomic = 1u << 2,
  kRightAll = kRightRead | kRightWrite | kRightAtomic,
};

// The kind of access, which selects the right it needs.
enum class Access : std::uint8_t { kRead, kWrite, kAtomic };

constexpr Rights right_needed(Access access) {
  switch (access) {
    case Access::kRead:
      return kRightRead;
    case Access::kWrite:
      return kRightWrite;
    case Access::kAtomic:
      return kRightAtomic;
  }
  return kRightAll;
}

// "rwa" style text <-> Rights, used by the config file and the tools. Returns false on a
// character other than r, w, a, or '-'.
bool parse_rights(const std::string& text, Rights& out);
std::string rights_to_string(Rights rights);

}  // namespace ethx
