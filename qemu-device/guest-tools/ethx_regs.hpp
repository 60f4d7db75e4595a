// The ethx-gpu BARs and control registers, as docs/register-map.md (version 2) describes them
// (the QEMU side is C in QEMU's tree and cannot include this header).
#pragma once

#include <cstdint>

namespace ethx::guest {

inline constexpr std::uint16_t kPciVendorId = 0x1234;
inline constexpr std::uint16_t kPciDeviceId = 0xe7e0;

inline constexpr unsigned kControlBar = 0;
inline constexpr unsigned kHbmBar = 2;     // this GPU's own memory (RAM)
inline constexpr unsigned kWindowBar = 4;  // the remote window (MMIO, address-map translated)

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
inline constexpr Register kGpuCount{"gpu_count", 0x28, 4};
inline constexpr Register kApertureMib{"aperture_mib", 0x2c, 4};
inline constexpr Register kHbmMib{"hbm_mib", 0x30, 4};
inline constexpr Register kAtomicAddr{"atomic_addr", 0x40, 8};
inline constexpr Register kAtomicOperand{"atomic_operand", 0x48, 8};
inline constexpr Register kAtomicCompare{"atomic_compare", 0x50, 8};
inline constexpr Register kAtomicCmd{"atomic_cmd", 0x58, 4};  // write-only
inline constexpr Register kAtomicResult{"atomic_result", 0x60, 8};
inline constexpr Register kAtomicStatus{"atomic_status", 0x68, 4};
inline constexpr Register kCopySrc{"copy_src", 0x80, 8};
inline constexpr Register kCopyDst{"copy_dst", 0x88, 8};
inline constexpr Register kCopyLen{"copy_len", 0x90, 8};
inline constexpr Register kCopyCmd{"copy_cmd", 0x98, 4};  // write-only
inline constexpr Register kCopyStatus{"copy_status", 0x9c, 4};
inline constexpr Register kCntLoads{"cnt_loads", 0xc0, 8};
inline constexpr Register kCntStores{"cnt_stores", 0xc8, 8};
inline constexpr Register kCntAtomics{"cnt_atomics", 0xd0, 8};
inline constexpr Register kCntErrors{"cnt_errors", 0xd8, 8};
inline constexpr Register kCntTimeouts{"cnt_timeouts", 0xe0, 8};
inline constexpr Register kCntServed{"cnt_served", 0xe8, 8};
inline constexpr Register kCntCopies{"cnt_copies", 0xf0, 8};
inline constexpr Register kCntCopyBytes{"cnt_copy_bytes", 0xf8, 8};

// Readable in every version (`status` shows them).
inline constexpr Register kControlRegisters[] = {kIdent, kVersion,   kGpuId,  kStatus,
                                                 kError, kFaultAddr, kScratch};
// Readable from version 2 on (reading them on version 1 would latch BAD_REGISTER).
inline constexpr Register kControlRegistersV2[] = {
    kGpuCount,      kApertureMib,  kHbmMib,       kAtomicAddr, kAtomicOperand,
    kAtomicCompare, kAtomicResult, kAtomicStatus, kCopySrc,    kCopyDst,
    kCopyLen,       kCopyStatus,   kCntLoads,     kCntStores,  kCntAtomics,
    kCntErrors,     kCntTimeouts,  kCntServed,    kCntCopies,  kCntCopyBytes};

inline constexpr std::uint32_t kIdentValue = 0x45544858;  // "ETHX"

inline constexpr std::uint32_t kStatusFabricUp = 1u << 0;
inline constexpr std::uint32_t kStatusErrorLatched = 1u << 1;
inline constexpr std::uint32_t kStatusCopyBusy = 1u << 2;

// ERROR bits, by bit number.
inline constexpr const char* kErrorBitNames[] = {
    "bad_register", "out_of_window", "no_rights", "timeout",        "remote_error",
    "bad_width",    "unreachable",   "no_fabric", "copy_busy_error"};
inline constexpr std::uint32_t kErrorBadRegister = 1u << 0;
inline constexpr std::uint32_t kErrorOutOfWindow = 1u << 1;
inline constexpr std::uint32_t kErrorTimeout = 1u << 3;
inline constexpr std::uint32_t kErrorCopyBusy = 1u << 8;

// ATOMIC_STATUS and COPY_STATUS bits 15:8, by code (0 is ok).
inline constexpr const char* kStatusCodeNames[] = {
    "ok", "out_of_window", "no_rights", "timeout", "refused", "bad_width", "unreachable"};

// ATOMIC_CMD: bits 1:0 op, bits 11:8 width in bytes.
enum class AtomicOp : std::uint32_t { kFetchAdd = 0, kSwap = 1, kCompareSwap = 2 };
constexpr std::uint32_t atomic_command(AtomicOp op, unsigned width) {
  return static_cast<std::uint32_t>(op) | (static_cast<std::uint32_t>(width & 0xf) << 8);
}

// COPY_CMD bit 0 starts; COPY_STATUS bits 7:0 state, bits 15:8 code when failed.
inline constexpr std::uint32_t kCopyStart = 1u << 0;
inline constexpr std::uint32_t kCopyIdle = 0;
inline constexpr std::uint32_t kCopyBusy = 1;
inline constexpr std::uint32_t kCopyDone = 2;
inline constexpr std::uint32_t kCopyFailed = 3;

}  // namespace ethx::guest
