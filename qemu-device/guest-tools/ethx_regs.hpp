// The ethx-gpu register map as the guest tools use it: C++ names for what
// qemu-device/ethx_gpu_regs.h defines (the one definition the QEMU device and the host side
// share), plus the names the tools print. No offset, width, bit or code is written here.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include "qemu-device/ethx_gpu_regs.h"

namespace ethx::guest {

inline constexpr std::uint16_t kPciVendorId = ETHX_GPU_VENDOR_ID;
inline constexpr std::uint16_t kPciDeviceId = ETHX_GPU_DEVICE_ID;

inline constexpr unsigned kControlBar = ETHX_GPU_CTRL_BAR;
inline constexpr unsigned kHbmBar = ETHX_GPU_HBM_BAR;        // this GPU's own memory (RAM)
inline constexpr unsigned kWindowBar = ETHX_GPU_WINDOW_BAR;  // the remote window (MMIO)

struct Register {
  const char* name;
  std::uint64_t offset;
  unsigned width;  // bytes
};

// A register by its ethx_gpu_regs.h name, with the name the tools print for it.
#define ETHX_GUEST_REGISTER(NAME, printed)            \
  Register {                                          \
    printed, ETHX_REG_##NAME, ETHX_REG_##NAME##_WIDTH \
  }

inline constexpr Register kIdent = ETHX_GUEST_REGISTER(IDENT, "ident");
inline constexpr Register kVersion = ETHX_GUEST_REGISTER(VERSION, "version");
inline constexpr Register kGpuId = ETHX_GUEST_REGISTER(GPU_ID, "gpu_id");
inline constexpr Register kStatus = ETHX_GUEST_REGISTER(STATUS, "status");
inline constexpr Register kError = ETHX_GUEST_REGISTER(ERROR, "error");
inline constexpr Register kFaultAddr = ETHX_GUEST_REGISTER(FAULT_ADDR, "fault_addr");
inline constexpr Register kScratch = ETHX_GUEST_REGISTER(SCRATCH, "scratch");
inline constexpr Register kGpuCount = ETHX_GUEST_REGISTER(GPU_COUNT, "gpu_count");
inline constexpr Register kApertureMib = ETHX_GUEST_REGISTER(APERTURE_MIB, "aperture_mib");
inline constexpr Register kHbmMib = ETHX_GUEST_REGISTER(HBM_MIB, "hbm_mib");
inline constexpr Register kAtomicAddr = ETHX_GUEST_REGISTER(ATOMIC_ADDR, "atomic_addr");
inline constexpr Register kAtomicOperand = ETHX_GUEST_REGISTER(ATOMIC_OPERAND, "atomic_operand");
inline constexpr Register kAtomicCompare = ETHX_GUEST_REGISTER(ATOMIC_COMPARE, "atomic_compare");
inline constexpr Register kAtomicCmd = ETHX_GUEST_REGISTER(ATOMIC_CMD, "atomic_cmd");  // WO
inline constexpr Register kAtomicResult = ETHX_GUEST_REGISTER(ATOMIC_RESULT, "atomic_result");
inline constexpr Register kAtomicStatus = ETHX_GUEST_REGISTER(ATOMIC_STATUS, "atomic_status");
// Read for its effect (waits for the GPU's posted stores; version 3): never in a list below.
inline constexpr Register kFlush = ETHX_GUEST_REGISTER(FLUSH, "flush");
inline constexpr Register kCopySrc = ETHX_GUEST_REGISTER(COPY_SRC, "copy_src");
inline constexpr Register kCopyDst = ETHX_GUEST_REGISTER(COPY_DST, "copy_dst");
inline constexpr Register kCopyLen = ETHX_GUEST_REGISTER(COPY_LEN, "copy_len");
inline constexpr Register kCopyCmd = ETHX_GUEST_REGISTER(COPY_CMD, "copy_cmd");  // WO
inline constexpr Register kCopyStatus = ETHX_GUEST_REGISTER(COPY_STATUS, "copy_status");
inline constexpr Register kCntLoads = ETHX_GUEST_REGISTER(CNT_LOADS, "cnt_loads");
inline constexpr Register kCntStores = ETHX_GUEST_REGISTER(CNT_STORES, "cnt_stores");
inline constexpr Register kCntAtomics = ETHX_GUEST_REGISTER(CNT_ATOMICS, "cnt_atomics");
inline constexpr Register kCntErrors = ETHX_GUEST_REGISTER(CNT_ERRORS, "cnt_errors");
inline constexpr Register kCntTimeouts = ETHX_GUEST_REGISTER(CNT_TIMEOUTS, "cnt_timeouts");
inline constexpr Register kCntServed = ETHX_GUEST_REGISTER(CNT_SERVED, "cnt_served");
inline constexpr Register kCntCopies = ETHX_GUEST_REGISTER(CNT_COPIES, "cnt_copies");
inline constexpr Register kCntCopyBytes = ETHX_GUEST_REGISTER(CNT_COPY_BYTES, "cnt_copy_bytes");

#undef ETHX_GUEST_REGISTER

// Readable in every version (`status` shows them).
inline constexpr Register kControlRegisters[] = {kIdent, kVersion,   kGpuId,  kStatus,
                                                 kError, kFaultAddr, kScratch};
// Readable from version 2 on (reading them on version 1 would latch BAD_REGISTER). FLUSH
// (version 3) is left out: reading it waits for the GPU's posted stores.
inline constexpr Register kControlRegistersV2[] = {
    kGpuCount,      kApertureMib,  kHbmMib,       kAtomicAddr, kAtomicOperand,
    kAtomicCompare, kAtomicResult, kAtomicStatus, kCopySrc,    kCopyDst,
    kCopyLen,       kCopyStatus,   kCntLoads,     kCntStores,  kCntAtomics,
    kCntErrors,     kCntTimeouts,  kCntServed,    kCntCopies,  kCntCopyBytes};

inline constexpr std::uint32_t kIdentValue = ETHX_IDENT;

inline constexpr std::uint32_t kStatusFabricUp = ETHX_STATUS_FABRIC_UP;
inline constexpr std::uint32_t kStatusErrorLatched = ETHX_STATUS_ERROR;
inline constexpr std::uint32_t kStatusCopyBusy = ETHX_STATUS_COPY_BUSY;

inline constexpr std::uint32_t kErrorBadRegister = ETHX_ERROR_BAD_REGISTER;
inline constexpr std::uint32_t kErrorOutOfWindow = ETHX_ERROR_OUT_OF_WINDOW;
inline constexpr std::uint32_t kErrorTimeout = ETHX_ERROR_TIMEOUT;
inline constexpr std::uint32_t kErrorUnreachable = ETHX_ERROR_UNREACHABLE;
inline constexpr std::uint32_t kErrorCopyBusy = ETHX_ERROR_COPY_BUSY;

// ERROR bit names, by bit number (placed by the header's bits, so a reordering cannot shift them).
inline constexpr auto kErrorBitNames = [] {
  std::array<const char*, ETHX_ERROR_BIT_COUNT> names{};
  const auto at = [&](std::uint32_t bit, const char* name) { names[std::countr_zero(bit)] = name; };
  at(ETHX_ERROR_BAD_REGISTER, "bad_register");
  at(ETHX_ERROR_OUT_OF_WINDOW, "out_of_window");
  at(ETHX_ERROR_NO_RIGHTS, "no_rights");
  at(ETHX_ERROR_TIMEOUT, "timeout");
  at(ETHX_ERROR_REMOTE_ERROR, "remote_error");
  at(ETHX_ERROR_BAD_WIDTH, "bad_width");
  at(ETHX_ERROR_UNREACHABLE, "unreachable");
  at(ETHX_ERROR_NO_FABRIC, "no_fabric");
  at(ETHX_ERROR_COPY_BUSY, "copy_busy_error");
  return names;
}();

// ATOMIC_STATUS and COPY_STATUS bits 15:8, by status code (0 is ok).
inline constexpr auto kStatusCodeNames = [] {
  std::array<const char*, ETHX_GPU_STATUS_COUNT> names{};
  names[ETHX_GPU_OK] = "ok";
  names[ETHX_GPU_OUT_OF_WINDOW] = "out_of_window";
  names[ETHX_GPU_NO_RIGHTS] = "no_rights";
  names[ETHX_GPU_TIMEOUT] = "timeout";
  names[ETHX_GPU_REMOTE_ERROR] = "remote_error";
  names[ETHX_GPU_BAD_WIDTH] = "bad_width";
  names[ETHX_GPU_UNREACHABLE] = "unreachable";
  names[ETHX_GPU_INTERNAL] = "internal";
  return names;
}();

enum class AtomicOp : std::uint32_t {
  kFetchAdd = ETHX_GPU_FETCH_ADD,
  kSwap = ETHX_GPU_SWAP,
  kCompareSwap = ETHX_GPU_COMPARE_SWAP
};
constexpr std::uint32_t atomic_command(AtomicOp op, unsigned width) {
  return ETHX_ATOMIC_CMD(static_cast<std::uint32_t>(op), width);
}

inline constexpr std::uint32_t kCopyStart = ETHX_COPY_CMD_START;
inline constexpr std::uint32_t kCopyIdle = ETHX_COPY_IDLE;
inline constexpr std::uint32_t kCopyBusy = ETHX_COPY_BUSY;
inline constexpr std::uint32_t kCopyDone = ETHX_COPY_DONE;
inline constexpr std::uint32_t kCopyFailed = ETHX_COPY_FAILED;

// COPY_STATUS split into the engine's state (kCopy*) and, when failed, its status code.
constexpr std::uint32_t copy_state(std::uint32_t copy_status) {
  return copy_status & ETHX_COPY_STATUS_STATE_MASK;
}
constexpr std::uint32_t copy_code(std::uint32_t copy_status) {
  return (copy_status >> ETHX_COPY_STATUS_CODE_SHIFT) & ETHX_COPY_STATUS_CODE_MASK;
}

}  // namespace ethx::guest
