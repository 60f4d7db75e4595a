// The ethx-gpu control BAR, as docs/register-map.md describes it (and qemu/ethx_gpu.c
// implements it; the QEMU side is C in QEMU's tree and cannot include this header).
#pragma once

#include <cstdint>

namespace ethx::guest {

inline constexpr std::uint16_t kPciVendorId = 0x1234;
inline constexpr std::uint16_t kPciDeviceId = 0xe7e0;

inline constexpr unsigned kControlBar = 0;

struct Register {
  const char* name;
  std::uint64_t offset;
  unsigned width;  // bytes
};

inline constexpr Register kIdent{"ident", 0x00, 4};
inline constexpr Register kVersion{"version", 0x04, 4};
inline constexpr Register kGpuId{"gpu_id", 0x08, 4};
inline constexpr Register kStatus{"status", 0x0c, 4};
inline constexpr Register kError{"error", 0x10, 4};
inline constexpr Register kFaultAddr{"fault_addr", 0x18, 8};
inline constexpr Register kScratch{"scratch", 0x20, 8};

inline constexpr Register kControlRegisters[] = {kIdent, kVersion,   kGpuId,  kStatus,
                                                 kError, kFaultAddr, kScratch};

inline constexpr std::uint32_t kIdentValue = 0x45544858;  // "ETHX"

inline constexpr std::uint32_t kStatusFabricUp = 1u << 0;
inline constexpr std::uint32_t kStatusErrorLatched = 1u << 1;
inline constexpr std::uint32_t kErrorBadRegister = 1u << 0;

}  // namespace ethx::guest
